// The CUDA attention's tile algorithm (kernels/cuda/attention_tiles.h) run by the host
// emulator of its thread blocks (kernels/cuda/attention_emulator.h): the same schedules and
// tile code as the GPU kernels, checked against the float64 reference of the CPU tests (torch
// autograd) and the CPU kernels on every machine (issue 5, req 5-6).
#include "kernels/cuda/attention_emulator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/varlen_attention.h"
#include "tests/kernels/attention_test_util.h"

namespace roboloop::kernels::cuda {
namespace {

using testing::AttentionResult;
using testing::PackedCase;

constexpr double kTolerance = 1e-5;

// Forward and backward of a case through the host emulator of the CUDA kernels.
AttentionResult Emulate(const PackedCase& c) {
  const torch::Tensor q = c.q.contiguous(), k = c.k.contiguous(), v = c.v.contiguous(),
                      dout = c.dout.contiguous();
  const AttentionShape shape = testing::ShapeOf(c);
  AttentionResult r{torch::empty_like(q), torch::empty({q.size(0), c.heads}), torch::empty_like(q),
                    torch::empty_like(q), torch::empty_like(q)};
  EmulateAttentionForward({shape, q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(),
                           r.out.data_ptr<float>(), r.lse.data_ptr<float>()});
  BackwardArgs backward;
  backward.shape = shape;
  backward.q = q.data_ptr<float>();
  backward.k = k.data_ptr<float>();
  backward.v = v.data_ptr<float>();
  backward.dout = dout.data_ptr<float>();
  backward.lse = r.lse.data_ptr<float>();
  backward.dq = r.dq.data_ptr<float>();
  backward.dk = r.dk.data_ptr<float>();
  backward.dv = r.dv.data_ptr<float>();
  torch::Tensor row_dots = torch::empty({q.size(0), c.heads});
  EmulateAttentionBackward(backward, r.out.data_ptr<float>(), row_dots.data_ptr<float>(),
                           q.size(0));
  return r;
}

TEST(AttentionTilesTest, EmulatedBlocksMatchFloat64OverTheGrid) {
  for (const PackedCase& c : testing::GridCases(testing::RunSeed() + 100, 3)) {
    testing::ExpectMatchesFloat64(c, Emulate(c), kTolerance);
  }
}

TEST(AttentionTilesTest, EmulatedBlocksAgreeWithTheCpuKernels) {
  for (const PackedCase& c : testing::GridCases(testing::RunSeed() + 200, 1)) {
    SCOPED_TRACE(testing::Describe(c));
    AttentionResult emulated = Emulate(c);
    VarlenAttentionOptions options;
    options.mask = c.mask;
    absl::StatusOr<VarlenAttentionOutput> cpu =
        VarlenAttentionForward(c.q, c.k, c.v, c.cu_seqlens, c.prefix_lengths, options);
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    absl::StatusOr<VarlenAttentionGrads> grads =
        VarlenAttentionBackward(c.q, c.k, c.v, c.cu_seqlens, c.prefix_lengths, cpu->out,
                                cpu->lse, c.dout, options);
    ASSERT_TRUE(grads.ok()) << grads.status();
    EXPECT_LE(testing::RelativeError(emulated.out, cpu->out), kTolerance);
    EXPECT_LE(testing::RelativeError(emulated.lse, cpu->lse), kTolerance);
    EXPECT_LE(testing::RelativeError(emulated.dq, grads->dq), kTolerance);
    EXPECT_LE(testing::RelativeError(emulated.dk, grads->dk), kTolerance);
    EXPECT_LE(testing::RelativeError(emulated.dv, grads->dv), kTolerance);
  }
}

// Head dims above 128 take the 256 instantiation; the CUDA kernels stop at kCudaMaxHeadDim.
TEST(AttentionTilesTest, WideHeadsUseTheLargestInstantiation) {
  std::mt19937_64 rng(testing::RunSeed() + 300);
  for (int64_t head_dim : {129, 256}) {
    PackedCase c = testing::RandomCase(&rng, 2, 80, 2, head_dim, MaskKind::kPrefixLm);
    testing::ExpectMatchesFloat64(c, Emulate(c), kTolerance);
  }
}

// A sequence's rows do not depend on the sequences packed with it: bitwise equal alone.
TEST(AttentionTilesTest, SequenceAloneEqualsSequenceInBatchBitwise) {
  std::mt19937_64 rng(testing::RunSeed() + 400);
  PackedCase batch = testing::RandomCase(&rng, 4, 150, 2, 40, MaskKind::kCausal);
  AttentionResult packed = Emulate(batch);
  const int64_t start = batch.lengths[0] + batch.lengths[1];
  const int64_t length = batch.lengths[2];
  auto slice = [&](const torch::Tensor& t) { return t.narrow(0, start, length).contiguous(); };
  PackedCase alone = batch;
  alone.lengths = {batch.lengths[2]};
  alone.prefixes = {batch.prefixes[2]};
  alone.q = slice(batch.q);
  alone.k = slice(batch.k);
  alone.v = slice(batch.v);
  alone.dout = slice(batch.dout);
  alone.cu_seqlens = torch::tensor({0, static_cast<int32_t>(length)}, torch::kInt);
  alone.prefix_lengths = torch::tensor({batch.prefixes[2]}, torch::kInt);
  AttentionResult single = Emulate(alone);
  EXPECT_TRUE(torch::equal(single.out, slice(packed.out)));
  EXPECT_TRUE(torch::equal(single.lse, slice(packed.lse)));
  EXPECT_TRUE(torch::equal(single.dq, slice(packed.dq)));
  EXPECT_TRUE(torch::equal(single.dk, slice(packed.dk)));
  EXPECT_TRUE(torch::equal(single.dv, slice(packed.dv)));
}

}  // namespace
}  // namespace roboloop::kernels::cuda
