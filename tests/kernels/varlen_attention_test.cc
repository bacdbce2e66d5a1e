// Varlen attention against a float64 reference, padded attention, thread counts, the portable
// path, bf16 inputs and bad inputs (issue 5, req 1-3 and 5).
#include "kernels/varlen_attention.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ATen/Parallel.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/rowwise_core.h"
#include "tests/kernels/attention_test_util.h"

namespace roboloop::kernels {
namespace {

using ::testing::HasSubstr;
using testing::ComputeReference;
using testing::PackedCase;
using testing::RandomCase;
using testing::RelativeError;

constexpr double kTolerance = 1e-5;

double DefaultScale(const PackedCase& c) { return 1.0 / std::sqrt(static_cast<double>(c.head_dim)); }

VarlenAttentionOptions OptionsOf(const PackedCase& c) {
  VarlenAttentionOptions options;
  options.mask = c.mask;
  return options;
}

// Our op through autograd: out and the gradients of sum(out * dout).
struct OpResult {
  torch::Tensor out, dq, dk, dv;
};

OpResult RunOp(const PackedCase& c) {
  torch::Tensor q = c.q.clone().requires_grad_();
  torch::Tensor k = c.k.clone().requires_grad_();
  torch::Tensor v = c.v.clone().requires_grad_();
  absl::StatusOr<torch::Tensor> out =
      VarlenAttention(q, k, v, c.cu_seqlens, c.prefix_lengths, OptionsOf(c));
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return {};
  out->backward(c.dout);
  return {out->detach(), q.grad(), k.grad(), v.grad()};
}

void ExpectMatchesReference(const PackedCase& c) {
  OpResult ours = RunOp(c);
  absl::StatusOr<VarlenAttentionOutput> forward =
      VarlenAttentionForward(c.q, c.k, c.v, c.cu_seqlens, c.prefix_lengths, OptionsOf(c));
  ASSERT_TRUE(forward.ok()) << forward.status();
  testing::ExpectMatchesFloat64(c, {ours.out, forward->lse, ours.dq, ours.dk, ours.dv},
                                kTolerance);
  EXPECT_TRUE(torch::equal(forward->out, ours.out)) << testing::Describe(c);
}

// The grid's corners (lengths 1 and 300, heads 1 and 8, head dims 16 and 128) and random
// samples of lengths 1..300, heads 1..8, head dims 16..128, for every mask kind.
TEST(VarlenAttentionTest, GridMatchesFloat64) {
  for (const PackedCase& c : testing::GridCases(testing::RunSeed(), 6)) ExpectMatchesReference(c);
}

// Padded batch [batch, heads, max_len, dim] with plain fp32 ops and a key-padding mask.
torch::Tensor PaddedAttention(const PackedCase& c, const torch::Tensor& q,
                              const torch::Tensor& k, const torch::Tensor& v) {
  const int64_t batch = static_cast<int64_t>(c.lengths.size());
  const int64_t max_length = *std::max_element(c.lengths.begin(), c.lengths.end());
  auto pad = [&](const torch::Tensor& t) {
    std::vector<torch::Tensor> rows;
    int64_t start = 0;
    for (int32_t length : c.lengths) {
      torch::Tensor s = t.narrow(0, start, length);
      rows.push_back(torch::constant_pad_nd(s, {0, 0, 0, 0, 0, max_length - length}));
      start += length;
    }
    return torch::stack(rows).transpose(1, 2);  // [batch, heads, max_len, dim]
  };
  torch::Tensor visible = torch::zeros({batch, 1, max_length, max_length}, torch::kBool);
  for (int64_t b = 0; b < batch; ++b) {
    int64_t length = c.lengths[b];
    visible[b][0].narrow(0, 0, length).narrow(1, 0, length).copy_(
        testing::MaskMatrix(c.mask, length, c.prefixes[b]));
  }
  torch::Tensor scores = torch::matmul(pad(q), pad(k).transpose(2, 3)) * DefaultScale(c);
  scores = scores.masked_fill(visible.logical_not(), -1e30);
  torch::Tensor out = torch::matmul(torch::softmax(scores, -1), pad(v)).transpose(1, 2);
  std::vector<torch::Tensor> rows;
  for (int64_t b = 0; b < batch; ++b) rows.push_back(out[b].narrow(0, 0, c.lengths[b]));
  return torch::cat(rows, 0);
}

TEST(VarlenAttentionTest, PackedMatchesPaddedPlainOps) {
  std::mt19937_64 rng(testing::RunSeed() + 10);
  for (MaskKind mask : testing::kAllMasks) {
    PackedCase c = RandomCase(&rng, 5, 200, 4, 64, mask);
    SCOPED_TRACE(testing::Describe(c));
    torch::Tensor q = c.q.clone().requires_grad_();
    torch::Tensor k = c.k.clone().requires_grad_();
    torch::Tensor v = c.v.clone().requires_grad_();
    torch::Tensor padded = PaddedAttention(c, q, k, v);
    padded.backward(c.dout);
    OpResult ours = RunOp(c);
    EXPECT_LE(RelativeError(ours.out, padded.detach()), kTolerance);
    EXPECT_LE(RelativeError(ours.dq, q.grad()), kTolerance);
    EXPECT_LE(RelativeError(ours.dk, k.grad()), kTolerance);
    EXPECT_LE(RelativeError(ours.dv, v.grad()), kTolerance);
  }
}

// Restores torch's intra-op thread count on scope exit.
class ThreadCountScope {
 public:
  explicit ThreadCountScope(int threads) : previous_(at::get_num_threads()) {
    at::set_num_threads(threads);
  }
  ~ThreadCountScope() { at::set_num_threads(previous_); }

 private:
  int previous_;
};

TEST(VarlenAttentionTest, OneAndTwoThreadsAreBitwiseEqual) {
  std::mt19937_64 rng(testing::RunSeed() + 20);
  for (MaskKind mask : testing::kAllMasks) {
    PackedCase c = RandomCase(&rng, 6, 300, 3, 48, mask);
    OpResult one, two;
    {
      ThreadCountScope threads(1);
      one = RunOp(c);
    }
    {
      ThreadCountScope threads(2);
      ASSERT_EQ(at::get_num_threads(), 2);
      two = RunOp(c);
    }
    EXPECT_TRUE(torch::equal(one.out, two.out));
    EXPECT_TRUE(torch::equal(one.dq, two.dq));
    EXPECT_TRUE(torch::equal(one.dk, two.dk));
    EXPECT_TRUE(torch::equal(one.dv, two.dv));
  }
}

// A sequence's output does not depend on the sequences packed around it.
TEST(VarlenAttentionTest, SequenceAloneEqualsSequenceInBatchBitwise) {
  std::mt19937_64 rng(testing::RunSeed() + 30);
  PackedCase batch = RandomCase(&rng, 4, 150, 2, 32, MaskKind::kPrefixLm);
  absl::StatusOr<VarlenAttentionOutput> packed = VarlenAttentionForward(
      batch.q, batch.k, batch.v, batch.cu_seqlens, batch.prefix_lengths, OptionsOf(batch));
  ASSERT_TRUE(packed.ok()) << packed.status();
  const int64_t start = batch.lengths[0] + batch.lengths[1];
  const int64_t length = batch.lengths[2];
  auto slice = [&](const torch::Tensor& t) { return t.narrow(0, start, length).contiguous(); };
  absl::StatusOr<VarlenAttentionOutput> alone = VarlenAttentionForward(
      slice(batch.q), slice(batch.k), slice(batch.v),
      torch::tensor({0, static_cast<int32_t>(length)}, torch::kInt),
      torch::tensor({batch.prefixes[2]}, torch::kInt), OptionsOf(batch));
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_TRUE(torch::equal(alone->out, slice(packed->out)));
}

// The packed-qkv entry reads q, k, v in place and writes one gradient, with the same sums.
TEST(VarlenAttentionTest, PackedQkvEqualsSeparateQkvBitwise) {
  std::mt19937_64 rng(testing::RunSeed() + 35);
  for (MaskKind mask : testing::kAllMasks) {
    PackedCase c = RandomCase(&rng, 5, 100, 3, 40, mask);
    const OpResult separate = RunOp(c);
    torch::Tensor qkv = torch::stack({c.q, c.k, c.v}, 1).requires_grad_();
    absl::StatusOr<torch::Tensor> out =
        VarlenAttentionQkv(qkv, c.cu_seqlens, c.prefix_lengths, OptionsOf(c));
    ASSERT_TRUE(out.ok()) << out.status();
    out->backward(c.dout);
    SCOPED_TRACE(testing::Describe(c));
    EXPECT_TRUE(torch::equal(*out, separate.out));
    EXPECT_TRUE(torch::equal(qkv.grad().select(1, 0), separate.dq));
    EXPECT_TRUE(torch::equal(qkv.grad().select(1, 1), separate.dk));
    EXPECT_TRUE(torch::equal(qkv.grad().select(1, 2), separate.dv));
  }
  const torch::Tensor pairs = torch::zeros({10, 2, 2, 8});
  absl::StatusOr<torch::Tensor> bad = VarlenAttentionQkv(
      pairs, torch::tensor({0, 10}, torch::kInt), torch::Tensor(), VarlenAttentionOptions{});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("qkv must be [total_tokens, 3, heads, head_dim]"));
}

// The widest build the CPU can run is the one in use: a missing ISA build (say, no Clang for the
// AVX2 one) would silently fall back to the portable kernels, many times slower.
TEST(VarlenAttentionTest, KernelsUseTheWidestIsaTheCpuRuns) {
  std::string expected = "portable";
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma")) {
    expected = "avx512";
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    expected = "avx2";
  }
  EXPECT_EQ(VarlenAttentionIsa(), expected);
  EXPECT_EQ(SelectedRowwiseKernels().isa, expected);
}

TEST(VarlenAttentionTest, PortableKernelsMatchSelectedKernels) {
  std::mt19937_64 rng(testing::RunSeed() + 40);
  PackedCase c = RandomCase(&rng, 3, 200, 2, 40, MaskKind::kCausal);
  absl::StatusOr<VarlenAttentionOutput> selected =
      VarlenAttentionForward(c.q, c.k, c.v, c.cu_seqlens, c.prefix_lengths, OptionsOf(c));
  ASSERT_TRUE(selected.ok()) << selected.status();
  const AttentionShape shape = testing::ShapeOf(c);
  torch::Tensor out = torch::empty_like(c.q);
  torch::Tensor lse = torch::empty({c.q.size(0), c.heads}, torch::kFloat);
  ForwardArgs args{shape, c.q.data_ptr<float>(), c.k.data_ptr<float>(), c.v.data_ptr<float>(),
                   out.data_ptr<float>(), lse.data_ptr<float>()};
  const AttentionKernels& portable = PortableAttentionKernels();
  std::vector<TileItem> items = EnumerateTiles(shape);
  std::vector<float> scratch(portable.scratch_floats(c.head_dim));
  portable.forward(args, items.data(), 0, static_cast<int64_t>(items.size()), scratch.data());
  EXPECT_LE(RelativeError(out, selected->out), kTolerance);
  EXPECT_LE(RelativeError(lse, selected->lse), kTolerance);
}

TEST(VarlenAttentionTest, HalfPrecisionInputsAreComputedInFloat32) {
  std::mt19937_64 rng(testing::RunSeed() + 50);
  for (torch::ScalarType dtype : {torch::kBFloat16, torch::kHalf}) {
    PackedCase c = RandomCase(&rng, 3, 120, 2, 32, MaskKind::kBidirectional);
    for (torch::Tensor* t : {&c.q, &c.k, &c.v}) *t = t->to(dtype);
    testing::Reference ref = ComputeReference(c, DefaultScale(c));
    OpResult ours = RunOp(c);
    ASSERT_EQ(ours.out.scalar_type(), dtype);
    ASSERT_EQ(ours.dq.scalar_type(), dtype);
    // Only the final rounding (relative step 2^-8 for bf16, 2^-11 for fp16) separates us from
    // the reference.
    EXPECT_LE(RelativeError(ours.out, ref.out), 1e-2);
    EXPECT_LE(RelativeError(ours.dq, ref.dq), 1e-2);
    EXPECT_LE(RelativeError(ours.dk, ref.dk), 1e-2);
    EXPECT_LE(RelativeError(ours.dv, ref.dv), 1e-2);
  }
}

// One bad input and the words its error must contain.
struct BadInput {
  std::string name;
  std::function<void(PackedCase*, VarlenAttentionOptions*)> spoil;
  std::string message;
};

TEST(VarlenAttentionTest, BadInputsAreRejectedWithClearMessages) {
  std::mt19937_64 rng(testing::RunSeed() + 60);
  const std::vector<BadInput> cases = {
      {"double q", [](PackedCase* c, auto*) { c->q = c->q.to(torch::kDouble); },
       "q must be float32, bfloat16 or float16"},
      {"meta q",
       [](PackedCase* c, auto*) {
         c->q = torch::empty(c->q.sizes(), torch::TensorOptions().device(torch::kMeta));
       },
       "q must be on the CPU"},
      {"2-D k", [](PackedCase* c, auto*) { c->k = c->k.flatten(1); },
       "k must be [total_tokens, heads, head_dim]"},
      {"v shape", [](PackedCase* c, auto*) { c->v = c->v.narrow(2, 0, 8).contiguous(); },
       "v has shape"},
      {"mixed dtype", [](PackedCase* c, auto*) { c->k = c->k.to(torch::kBFloat16); },
       "k has dtype"},
      {"int64 cu", [](PackedCase* c, auto*) { c->cu_seqlens = c->cu_seqlens.to(torch::kLong); },
       "cu_seqlens must be int32"},
      {"cu start", [](PackedCase* c, auto*) { c->cu_seqlens[0] = 1; },
       "cu_seqlens must start at 0"},
      {"cu order",
       [](PackedCase* c, auto*) { c->cu_seqlens[1] = c->cu_seqlens[2].item<int32_t>() + 1; },
       "non-decreasing"},
      {"cu end",
       [](PackedCase* c, auto*) { c->cu_seqlens[-1] = c->cu_seqlens[-1].item<int32_t>() + 5; },
       "must end at total_tokens"},
      {"prefix count",
       [](PackedCase* c, auto* o) {
         o->mask = MaskKind::kPrefixLm;
         c->prefix_lengths = c->prefix_lengths.narrow(0, 0, 1).clone();
       },
       "prefix_lengths must have 3 entries"},
      {"prefix range",
       [](PackedCase* c, auto* o) {
         o->mask = MaskKind::kPrefixLm;
         c->prefix_lengths[1] = 1000;
       },
       "outside [0,"},
      {"scale", [](PackedCase*, auto* o) { o->softmax_scale = -1; }, "softmax_scale"},
      {"mask", [](PackedCase*, auto* o) { o->mask = static_cast<MaskKind>(7); },
       "options.mask is unknown"},
  };
  for (const BadInput& bad : cases) {
    SCOPED_TRACE(bad.name);
    PackedCase c = RandomCase(&rng, 3, 20, 2, 16, MaskKind::kBidirectional);
    VarlenAttentionOptions options;
    bad.spoil(&c, &options);
    absl::StatusOr<torch::Tensor> out =
        VarlenAttention(c.q, c.k, c.v, c.cu_seqlens, c.prefix_lengths, options);
    ASSERT_FALSE(out.ok());
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(out.status().message()), HasSubstr(bad.message));
    absl::StatusOr<VarlenAttentionOutput> forward =
        VarlenAttentionForward(c.q, c.k, c.v, c.cu_seqlens, c.prefix_lengths, options);
    EXPECT_FALSE(forward.ok());
  }
}

TEST(VarlenAttentionTest, BackwardRejectsMisshapedOutputs) {
  std::mt19937_64 rng(testing::RunSeed() + 70);
  PackedCase c = RandomCase(&rng, 2, 20, 2, 16, MaskKind::kCausal);
  absl::StatusOr<VarlenAttentionOutput> fwd =
      VarlenAttentionForward(c.q, c.k, c.v, c.cu_seqlens, c.prefix_lengths, OptionsOf(c));
  ASSERT_TRUE(fwd.ok());
  absl::StatusOr<VarlenAttentionGrads> grads = VarlenAttentionBackward(
      c.q, c.k, c.v, c.cu_seqlens, c.prefix_lengths, fwd->out, torch::cat({fwd->lse, fwd->lse}), c.dout,
      OptionsOf(c));
  ASSERT_FALSE(grads.ok());
  EXPECT_THAT(std::string(grads.status().message()), HasSubstr("lse must be"));
  grads = VarlenAttentionBackward(c.q, c.k, c.v, c.cu_seqlens, c.prefix_lengths, fwd->out,
                                  fwd->lse, c.dout.narrow(0, 0, 1), OptionsOf(c));
  ASSERT_FALSE(grads.ok());
  EXPECT_THAT(std::string(grads.status().message()), HasSubstr("dout has shape"));
}

// The ops on CUDA tensors (issue 5, req 6), through autograd, against the CPU ops. Runs only
// with a CUDA build of LibTorch on a machine with a GPU.
TEST(VarlenAttentionTest, CudaTensorsMatchTheCpuOp) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "LibTorch sees no CUDA device";
  std::mt19937_64 rng(testing::RunSeed() + 90);
  for (MaskKind mask : testing::kAllMasks) {
    PackedCase c = RandomCase(&rng, 5, 300, 4, 64, mask);
    SCOPED_TRACE(testing::Describe(c));
    auto run = [&](const torch::Device& device) {
      PackedCase on_device = c;
      on_device.q = c.q.to(device);
      on_device.k = c.k.to(device);
      on_device.v = c.v.to(device);
      on_device.dout = c.dout.to(device);
      OpResult r = RunOp(on_device);
      if (!r.out.defined()) return r;
      return OpResult{r.out.cpu(), r.dq.cpu(), r.dk.cpu(), r.dv.cpu()};
    };
    OpResult cpu = run(torch::kCPU), gpu = run(torch::kCUDA);
    ASSERT_TRUE(gpu.out.defined());
    EXPECT_LE(RelativeError(gpu.out, cpu.out), kTolerance);
    EXPECT_LE(RelativeError(gpu.dq, cpu.dq), kTolerance);
    EXPECT_LE(RelativeError(gpu.dk, cpu.dk), kTolerance);
    EXPECT_LE(RelativeError(gpu.dv, cpu.dv), kTolerance);
  }
}

// LibTorch's kernels on CUDA (issue 22, req 1): FlashAttention for bfloat16 and float16,
// memory-efficient attention for float32, every mask, through autograd and the forward's
// log-sum-exp, against the float64 reference on the same (rounded) inputs. Tolerances, relative
// L2 error per tensor: float32 2e-5; float16 5e-3 and bfloat16 2e-2 (a few units of their
// rounding step: the kernels round P and dS to the input dtype inside).
struct DtypeTolerance {
  torch::ScalarType dtype;
  double tolerance;
};
constexpr DtypeTolerance kLibTorchTolerances[] = {
    {torch::kFloat, 2e-5}, {torch::kHalf, 5e-3}, {torch::kBFloat16, 2e-2}};

PackedCase OnCuda(PackedCase c, torch::ScalarType dtype) {
  for (torch::Tensor* t : {&c.q, &c.k, &c.v, &c.dout}) *t = t->to(dtype).to(torch::kCUDA);
  return c;
}

// The reference's inputs: the device case's values on the CPU (rounded to its dtype).
PackedCase OnCpu(PackedCase c) {
  for (torch::Tensor* t : {&c.q, &c.k, &c.v, &c.dout}) *t = t->cpu().to(torch::kFloat);
  return c;
}

TEST(VarlenAttentionTest, CudaLibTorchKernelsMatchFloat64) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "LibTorch sees no CUDA device";
  std::mt19937_64 rng(testing::RunSeed() + 100);
  for (const DtypeTolerance& t : kLibTorchTolerances) {
    for (MaskKind mask : testing::kAllMasks) {
      const PackedCase device = OnCuda(RandomCase(&rng, 6, 300, 4, 64, mask), t.dtype);
      SCOPED_TRACE(std::string(c10::toString(t.dtype)) + " " + testing::Describe(device));
      OpResult ours = RunOp(device);
      ASSERT_TRUE(ours.out.defined());
      ASSERT_EQ(ours.out.scalar_type(), t.dtype);
      absl::StatusOr<VarlenAttentionOutput> forward = VarlenAttentionForward(
          device.q, device.k, device.v, device.cu_seqlens, device.prefix_lengths, OptionsOf(device));
      ASSERT_TRUE(forward.ok()) << forward.status();
      absl::StatusOr<VarlenAttentionGrads> grads = VarlenAttentionBackward(
          device.q, device.k, device.v, device.cu_seqlens, device.prefix_lengths, forward->out,
          forward->lse, device.dout, OptionsOf(device));
      ASSERT_TRUE(grads.ok()) << grads.status();
      const PackedCase host = OnCpu(device);
      testing::ExpectMatchesFloat64(
          host, {ours.out.cpu(), forward->lse.cpu(), ours.dq.cpu(), ours.dk.cpu(), ours.dv.cpu()},
          t.tolerance);
      testing::ExpectMatchesFloat64(host,
                                    {forward->out.cpu(), forward->lse.cpu(), grads->dq.cpu(),
                                     grads->dk.cpu(), grads->dv.cpu()},
                                    t.tolerance);
    }
  }
}

TEST(VarlenAttentionTest, CudaPackedQkvOnLibTorchKernelsMatchesSeparateQkv) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "LibTorch sees no CUDA device";
  std::mt19937_64 rng(testing::RunSeed() + 110);
  for (MaskKind mask : testing::kAllMasks) {
    const PackedCase c = OnCuda(RandomCase(&rng, 4, 200, 2, 64, mask), torch::kBFloat16);
    SCOPED_TRACE(testing::Describe(c));
    torch::Tensor qkv = torch::stack({c.q, c.k, c.v}, 1).requires_grad_();
    absl::StatusOr<torch::Tensor> packed =
        VarlenAttentionQkv(qkv, c.cu_seqlens, c.prefix_lengths, OptionsOf(c));
    ASSERT_TRUE(packed.ok()) << packed.status();
    packed->backward(c.dout);
    const OpResult separate = RunOp(c);
    // The forward kernels are deterministic; FlashAttention's backward sums dq with atomics.
    EXPECT_TRUE(torch::equal(packed->detach(), separate.out));
    EXPECT_LE(RelativeError(qkv.grad().cpu(),
                            torch::stack({separate.dq, separate.dk, separate.dv}, 1).cpu()),
              1e-2);
  }
}

// Head dims LibTorch's kernels refuse still run, on roboloop's own CUDA kernels.
TEST(VarlenAttentionTest, CudaHeadDimsLibTorchRefusesRunOnTheOwnKernels) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "LibTorch sees no CUDA device";
  std::mt19937_64 rng(testing::RunSeed() + 120);
  for (torch::ScalarType dtype : {torch::kFloat, torch::kBFloat16}) {
    const PackedCase device = OnCuda(RandomCase(&rng, 3, 100, 2, 18, MaskKind::kPrefixBlock), dtype);
    SCOPED_TRACE(testing::Describe(device));
    OpResult ours = RunOp(device);
    ASSERT_TRUE(ours.out.defined());
    const testing::Reference ref = ComputeReference(OnCpu(device), DefaultScale(device));
    const double tolerance = dtype == torch::kFloat ? kTolerance : 1e-2;
    EXPECT_LE(RelativeError(ours.out.cpu(), ref.out), tolerance);
    EXPECT_LE(RelativeError(ours.dq.cpu(), ref.dq), tolerance);
    EXPECT_LE(RelativeError(ours.dk.cpu(), ref.dk), tolerance);
    EXPECT_LE(RelativeError(ours.dv.cpu(), ref.dv), tolerance);
  }
}

}  // namespace
}  // namespace roboloop::kernels
