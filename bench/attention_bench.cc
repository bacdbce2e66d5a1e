// Benchmark of issue 5 (req 7): packed varlen attention forward+backward against plain
// LibTorch anchors measured alternately in the same run, and the batch-invariant MLP forward
// against the default ops. Ours runs on every core, like the sgemm anchor; the LibTorch
// anchors take the faster of one thread and every core. Prints the settings and a markdown
// table (median of 5, min-max).
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_stats.h"
#include "kernels/batch_invariant.h"
#include "kernels/varlen_attention.h"

namespace roboloop::kernels {
namespace {

constexpr int kSamples = 5;
constexpr int64_t kSequences = 32, kHeads = 8, kHeadDim = 64;

// Seconds of one run of `body`, timed after a pause in which the previous side's idle
// threads stop spinning: OpenBLAS's pool spins for about 0.1 s after a GEMM (its default
// OPENBLAS_THREAD_TIMEOUT) and would otherwise take the cores the next side's threads need.
double SecondsOf(const std::function<void()>& body) {
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  auto start = std::chrono::steady_clock::now();
  body();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// An anchor's seconds at its faster thread count: one torch thread or the current count (small
// LibTorch ops can lose more to two threads' synchronisation than they gain), so running ours
// on every core never slows its anchors down.
double AnchorSecondsOf(const std::function<void()>& body) {
  const int threads = at::get_num_threads();
  const double at_threads = SecondsOf(body);
  if (threads == 1) return at_threads;
  at::set_num_threads(1);
  const double at_one = SecondsOf(body);
  at::set_num_threads(threads);
  return std::min(at_threads, at_one);
}

// Both sides run on every core: torch's intra-op threads (LibTorch's default here is 1)
// follow OpenBLAS's pool, which spans the machine, unless OMP_NUM_THREADS says otherwise.
void UseEveryCoreUnlessTold() {
  if (std::getenv("OMP_NUM_THREADS") != nullptr) return;
  at::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

// The per-sample ratios numerator[i] / denominator[i], summarised: the pairs ran back to back, so their ratio
// cancels the host's slower and faster spells.
bench::Summary PairedRatio(const std::vector<double>& numerator, const std::vector<double>& denominator) {
  std::vector<double> ratios;
  for (size_t i = 0; i < numerator.size(); ++i) ratios.push_back(numerator[i] / denominator[i]);
  return bench::Summarize(ratios);
}

// "<median>x (min-max <min>-<max>)".
std::string RatioText(const bench::Summary& ratio) {
  char text[96];
  std::snprintf(text, sizeof(text), "%.2fx (min-max %.2f-%.2f)", ratio.median, ratio.min, ratio.max);
  return text;
}

// LibTorch's BLAS_INFO and LAPACK_INFO build settings, e.g. "BLAS_INFO=mkl LAPACK_INFO=mkl".
std::string BlasLine() {
  const std::string config = at::show_config();
  std::string found;
  for (const char* key : {"BLAS_INFO=", "LAPACK_INFO="}) {
    const size_t at = config.find(key);
    if (at == std::string::npos) continue;
    found += (found.empty() ? "" : " ") + config.substr(at, config.find_first_of(", \n", at) - at);
  }
  return found.empty() ? "unknown" : found;
}

void PrintSettings() {
  std::printf("settings: torch intra-op threads %d, kernel ISA %s\n%sblas: %s\n", at::get_num_threads(),
              VarlenAttentionIsa(), bench::MachineSettings().c_str(), BlasLine().c_str());
}

// The attention problem: lengths uniform in [64, 256] from seed 0, inputs N(0, 1).
struct Problem {
  std::vector<int32_t> lengths;
  torch::Tensor q, k, v, dout, cu_seqlens;
  double useful_flops;  // 4 L^2 d forward + 8 L^2 d backward, per sequence and head
};

Problem MakeProblem() {
  Problem p;
  std::mt19937 rng(0);
  std::uniform_int_distribution<int32_t> length(64, 256);
  std::vector<int32_t> offsets = {0};
  p.useful_flops = 0;
  for (int64_t b = 0; b < kSequences; ++b) {
    p.lengths.push_back(length(rng));
    offsets.push_back(offsets.back() + p.lengths.back());
    p.useful_flops += 12.0 * p.lengths.back() * p.lengths.back() * kHeadDim * kHeads;
  }
  torch::manual_seed(0);
  const int64_t total = offsets.back();
  p.q = torch::randn({total, kHeads, kHeadDim});
  p.k = torch::randn({total, kHeads, kHeadDim});
  p.v = torch::randn({total, kHeads, kHeadDim});
  p.dout = torch::randn({total, kHeads, kHeadDim});
  p.cu_seqlens = torch::tensor(offsets, torch::kInt);
  return p;
}

void RunOurs(const Problem& p) {
  torch::Tensor q = p.q.clone().requires_grad_(), k = p.k.clone().requires_grad_(),
                v = p.v.clone().requires_grad_();
  absl::StatusOr<torch::Tensor> out =
      VarlenAttention(q, k, v, p.cu_seqlens, torch::Tensor(), VarlenAttentionOptions{});
  if (!out.ok()) {
    std::fprintf(stderr, "attention failed: %s\n", out.status().ToString().c_str());
    std::exit(1);
  }
  out->backward(p.dout);
}

// Plain ops on one [..., len, dim] block; `hidden` masks keys out (or is undefined).
torch::Tensor PlainAttention(const torch::Tensor& q, const torch::Tensor& k,
                             const torch::Tensor& v, const torch::Tensor& hidden) {
  torch::Tensor scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(kHeadDim));
  if (hidden.defined()) scores = scores.masked_fill(hidden, -1e30);
  return torch::matmul(torch::softmax(scores, -1), v);
}

void RunPadded(const torch::Tensor& padded_q, const torch::Tensor& hidden) {
  torch::Tensor q = padded_q.clone().requires_grad_(), k = padded_q.clone().requires_grad_(),
                v = padded_q.clone().requires_grad_();
  torch::Tensor out = PlainAttention(q, k, v, hidden);
  out.backward(torch::ones_like(out));
}

void RunPerSequence(const Problem& p) {
  torch::Tensor q = p.q.clone().requires_grad_(), k = p.k.clone().requires_grad_(),
                v = p.v.clone().requires_grad_();
  std::vector<torch::Tensor> outs;
  int64_t start = 0;
  for (int32_t length : p.lengths) {
    auto slice = [&](const torch::Tensor& t) { return t.narrow(0, start, length).transpose(0, 1); };
    outs.push_back(PlainAttention(slice(q), slice(k), slice(v), {}).transpose(0, 1));
    start += length;
  }
  torch::cat(outs, 0).backward(p.dout);
}

// Packed varlen attention forward and backward against its anchors: padded and per-sequence plain ops, and a
// 1024^3 sgemm as the peak.
void BenchAttention() {
  Problem p = MakeProblem();
  const int64_t max_length = *std::max_element(p.lengths.begin(), p.lengths.end());
  torch::Tensor padded_q = torch::randn({kSequences, kHeads, max_length, kHeadDim});
  torch::Tensor hidden = torch::zeros({kSequences, 1, 1, max_length}, torch::kBool);
  for (int64_t b = 0; b < kSequences; ++b) {
    hidden[b].narrow(-1, p.lengths[b], max_length - p.lengths[b]).fill_(true);
  }
  torch::Tensor a = torch::randn({1024, 1024}), b = torch::randn({1024, 1024});
  const int kGemmReps = 20;

  std::vector<double> ours, padded, loop, gemm;
  for (int sample = -1; sample < kSamples; ++sample) {  // sample -1 warms up
    double t_ours = SecondsOf([&] { RunOurs(p); });
    double t_padded = AnchorSecondsOf([&] { RunPadded(padded_q, hidden); });
    double t_loop = AnchorSecondsOf([&] { RunPerSequence(p); });
    double t_gemm = SecondsOf([&] {
      for (int r = 0; r < kGemmReps; ++r) torch::mm(a, b);
    }) / kGemmReps;
    if (sample < 0) continue;
    ours.push_back(t_ours);
    padded.push_back(t_padded);
    loop.push_back(t_loop);
    gemm.push_back(t_gemm);
  }
  const bench::Summary s_ours = bench::Summarize(ours), s_padded = bench::Summarize(padded),
                       s_loop = bench::Summarize(loop), s_gemm = bench::Summarize(gemm);
  const double gemm_gflops = 2.0 * 1024 * 1024 * 1024 / s_gemm.median / 1e9;
  const double ours_gflops = p.useful_flops / s_ours.median / 1e9;
  std::printf("\nattention fwd+bwd: %lld sequences, lengths U[64,256] seed 0 (%lld tokens), "
              "%lld heads, head dim %lld, bidirectional\n",
              static_cast<long long>(kSequences), static_cast<long long>(p.q.size(0)),
              static_cast<long long>(kHeads), static_cast<long long>(kHeadDim));
  std::printf("| case | median ms | min-max ms | ratio |\n|---|---|---|---|\n");
  auto row = [](const char* name, bench::Summary s, const std::string& ratio) {
    std::printf("| %s | %.2f | %.2f-%.2f | %s |\n", name, s.median * 1e3, s.min * 1e3,
                s.max * 1e3, ratio.c_str());
  };
  char text[128];
  row("ours (packed varlen)", s_ours, "1");
  row("(a) padded plain ops", s_padded, "ours " + RatioText(PairedRatio(padded, ours)) + " faster (goal >= 1.8x)");
  row("(b) per-sequence plain ops", s_loop, "ours " + RatioText(PairedRatio(loop, ours)) + " faster (goal >= 1.3x)");
  std::snprintf(text, sizeof(text), "%.1f GFLOP/s peak anchor", gemm_gflops);
  row("(c) sgemm 1024^3 (one)", s_gemm, text);
  std::printf("ours achieved %.1f GFLOP/s (12 L^2 d useful flops per head) = %.2f of sgemm "
              "(goal >= 0.35)\n",
              ours_gflops, ours_gflops / gemm_gflops);
}

// The batch-invariant MLP forward (64 -> 256 -> 256 -> 16, gelu, batch 256) against LibTorch's default ops.
void BenchBatchInvariantMlp() {
  torch::NoGradGuard no_grad;
  torch::Tensor x = torch::randn({256, 64});
  torch::Tensor w1 = torch::randn({256, 64}) * 0.1, b1 = torch::randn({256}) * 0.1;
  torch::Tensor w2 = torch::randn({256, 256}) * 0.1, b2 = torch::randn({256}) * 0.1;
  torch::Tensor w3 = torch::randn({16, 256}) * 0.1, b3 = torch::randn({16}) * 0.1;
  auto mlp = [&] {
    torch::Tensor h = Activate(Activation::kGelu, Linear(x, w1, b1));
    h = Activate(Activation::kGelu, Linear(h, w2, b2));
    return Linear(h, w3, b3);
  };
  const int kMlpReps = 200;
  std::vector<double> default_ops, invariant_ops;
  for (int sample = -1; sample < kSamples; ++sample) {
    double t_default = AnchorSecondsOf([&] {
      for (int r = 0; r < kMlpReps; ++r) mlp();
    }) / kMlpReps;
    double t_invariant = SecondsOf([&] {
      BatchInvariantScope invariant;
      for (int r = 0; r < kMlpReps; ++r) mlp();
    }) / kMlpReps;
    if (sample < 0) continue;
    default_ops.push_back(t_default);
    invariant_ops.push_back(t_invariant);
  }
  const bench::Summary s_default = bench::Summarize(default_ops), s_invariant = bench::Summarize(invariant_ops);
  std::printf("\nMLP forward 64-256-256-16 (gelu), batch 256\n");
  std::printf("| case | median us | min-max us | ratio |\n|---|---|---|---|\n");
  auto row_us = [](const char* name, bench::Summary s, const std::string& ratio) {
    std::printf("| %s | %.1f | %.1f-%.1f | %s |\n", name, s.median * 1e6, s.min * 1e6,
                s.max * 1e6, ratio.c_str());
  };
  row_us("default LibTorch ops", s_default, "1");
  const bench::Summary slowdown = PairedRatio(invariant_ops, default_ops);
  row_us("batch-invariant ops", s_invariant,
         RatioText(slowdown) + " the default's time: " + (slowdown.median > 1.0 ? "slower" : "faster") +
             " (goal <= 2x slower)");
}

int Main() {
  UseEveryCoreUnlessTold();
  PrintSettings();
  BenchAttention();
  BenchBatchInvariantMlp();
  return 0;
}

}  // namespace
}  // namespace roboloop::kernels

int main() { return roboloop::kernels::Main(); }
