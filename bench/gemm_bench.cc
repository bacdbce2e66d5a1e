// Benchmark of the training linears' GEMM (kernels/dense.h, issue 6 req 10a): our kernel against
// LibTorch's own call for the same product (addmm with the bias, or mm; OpenBLAS here) at the
// shapes of the train bench's transformer step, alternating, 5 samples each, both sides on every
// core. Prints each shape's GFLOP/s, the median ratio with its min-max, and the settings.
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_stats.h"
#include "kernels/dense.h"

namespace roboloop::bench {
namespace {

constexpr int kSamples = 5;
constexpr int kCallsPerSample = 20;
constexpr int64_t kTokens = 256 * 24;  // batch 256 x (history 8 + chunk 16)

// One product of the step: C[m][n] = A B (+ bias), A stored as given by `a_transposed`.
struct Shape {
  const char* name;
  int64_t m, n, k;
  bool a_transposed;  // A is the transpose of a stored [k][m] matrix (the weight gradients)
  bool b_transposed;  // B is the transpose of a stored [n][k] matrix (a weight, forward)
  bool bias;
};

const Shape kShapes[] = {
    {"forward qkv  [6144,128]x[128,384]", kTokens, 384, 128, false, true, false},
    {"forward fc1  [6144,128]x[128,512] + b", kTokens, 512, 128, false, true, true},
    {"forward fc2  [6144,512]x[512,128] + b", kTokens, 128, 512, false, true, true},
    {"input grad fc1 [6144,512]x[512,128]", kTokens, 128, 512, false, false, false},
    {"weight grad fc1 [512,6144]x[6144,128]", 512, 128, kTokens, true, false, false},
};

// Seconds of kCallsPerSample calls of `body`, after a pause in which the other side's idle
// threads stop spinning (OpenBLAS's pool spins ~0.1 s after a GEMM).
double SecondsOf(const std::function<void()>& body) {
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  body();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kCallsPerSample; ++i) body();
  return SecondsSince(start);
}

std::string Range(const Summary& s) {
  char text[96];
  std::snprintf(text, sizeof(text), "%.2fx (%.2f-%.2f)", s.median, s.min, s.max);
  return text;
}

void RunShape(const Shape& s, kernels::GemmBlockKernel kernel) {
  const torch::Tensor a = s.a_transposed ? torch::randn({s.k, s.m}) : torch::randn({s.m, s.k});
  const torch::Tensor b = s.b_transposed ? torch::randn({s.n, s.k}) : torch::randn({s.k, s.n});
  const torch::Tensor bias = s.bias ? torch::randn({s.n}) : torch::Tensor();
  const torch::Tensor a_view = s.a_transposed ? a.t() : a, b_view = s.b_transposed ? b.t() : b;
  const kernels::MatrixView a_matrix{a.data_ptr<float>(), a_view.stride(0), a_view.stride(1)};
  const kernels::MatrixView b_matrix{b.data_ptr<float>(), b_view.stride(0), b_view.stride(1)};
  const auto ours = [&] { kernels::MatMul(kernel, a_matrix, b_matrix, s.m, s.n, s.k, bias); };
  const auto anchor = [&] { s.bias ? torch::addmm(bias, a_view, b_view) : torch::mm(a_view, b_view); };
  const double flops = 2.0 * s.m * s.n * s.k * kCallsPerSample;
  std::vector<double> ours_rate, anchor_rate, ratio;
  for (int sample = 0; sample < kSamples; ++sample) {
    ours_rate.push_back(flops / SecondsOf(ours) / 1e9);
    anchor_rate.push_back(flops / SecondsOf(anchor) / 1e9);
    ratio.push_back(ours_rate.back() / anchor_rate.back());
  }
  std::printf("| %s | %.1f | %.1f | %s |\n", s.name, Summarize(ours_rate).median, Summarize(anchor_rate).median,
              Range(Summarize(ratio)).c_str());
}

}  // namespace
}  // namespace roboloop::bench

int main() {
  using namespace roboloop;
  const kernels::GemmBlockKernel kernel = kernels::SelectedGemmKernel();
  if (kernel == nullptr) {
    std::fprintf(stderr, "gemm_bench: this CPU (or build) has no AVX2 + FMA or AVX-512 kernel to measure\n");
    return 1;
  }
  if (std::getenv("OMP_NUM_THREADS") == nullptr) {
    at::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  }
  std::printf("%storch intra-op threads %d (both sides); ours: the %s kernel, the one the linears use here\n",
              bench::MachineSettings().c_str(), at::get_num_threads(),
              kernel == kernels::Avx512GemmKernel() ? "AVX-512" : "AVX2 + FMA");
  std::printf("| product | ours GFLOP/s | LibTorch GFLOP/s | ratio, median of %d (min-max) |\n|---|---|---|---|\n",
              bench::kSamples);
  for (const bench::Shape& shape : bench::kShapes) bench::RunShape(shape, kernel);
  return 0;
}
