// The CUDA path's composition on the CPU (issue 22, req 1): every mask's varlen calls run through
// a float64 dense per-call kernel (the semantics LibTorch's kernels have: every key, or causal
// aligned bottom-right) and are gathered, placed and summed by kernels/varlen_calls.h; the
// packed result must be the float64 reference of the whole mask, forward, log-sum-exp and
// gradients. LibTorch's own kernels themselves are checked on a GPU (gpu.VarlenAttentionTest.*).
#include "kernels/varlen_calls.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "tests/kernels/attention_test_util.h"

namespace roboloop::kernels {
namespace {

using testing::PackedCase;
using testing::RelativeError;

// How a kernel keeps a call's log-sum-exp: as the rows [n_q, heads] the ops return, or in the
// layouts of LibTorch's kernels that LseRowsOfKernelLayout reads.
enum class LseLayout {
  kRows,
  kHeadMajor,          // FlashAttention's varlen [heads, n_q]
  kPaddedBySequence,   // memory-efficient attention's [sequences, heads, longest rounded up to 32]
};

// `rows` [n_q, heads] of `call` in `layout`; the padding of kPaddedBySequence is NaN, so a read of
// it shows.
torch::Tensor InLayout(const PlannedCall& call, const torch::Tensor& rows, LseLayout layout) {
  if (layout == LseLayout::kRows) return rows;
  if (layout == LseLayout::kHeadMajor) return rows.t().contiguous();
  const std::vector<int32_t>& cu = call.plan.cu_seqlens_q;
  const int64_t padded = (call.plan.max_seqlen_q + 31) / 32 * 32;
  torch::Tensor lse = torch::full({static_cast<int64_t>(cu.size()) - 1, rows.size(1), padded},
                                  std::numeric_limits<float>::quiet_NaN(), rows.options());
  for (size_t b = 0; b + 1 < cu.size(); ++b) {
    lse[b].narrow(1, 0, cu[b + 1] - cu[b]).copy_(rows.narrow(0, cu[b], cu[b + 1] - cu[b]).t());
  }
  return lse;
}

// One call, sequence by sequence, as plain float64 ops with autograd for the backward, keeping
// its log-sum-exp in `layout`.
class DenseCallKernel : public VarlenCallKernel {
 public:
  explicit DenseCallKernel(LseLayout layout = LseLayout::kRows) : layout_(layout) {}

  CallState Forward(const PlannedCall& call, const torch::Tensor& q, const torch::Tensor& k,
                    const torch::Tensor& v, double scale) const override {
    torch::NoGradGuard no_grad;
    const Dense dense = Run(call, q, k, v, scale);
    return {dense.out, InLayout(call, dense.lse, layout_), torch::Tensor(), torch::Tensor()};
  }

  std::vector<torch::Tensor> Backward(const PlannedCall& call, const CallState& state,
                                      const torch::Tensor& dout, const torch::Tensor& q,
                                      const torch::Tensor& k, const torch::Tensor& v,
                                      double scale) const override {
    EXPECT_TRUE(torch::equal(state.out, Run(call, q, k, v, scale).out));
    torch::AutoGradMode grad_mode(true);
    torch::Tensor qg = q.detach().requires_grad_(), kg = k.detach().requires_grad_(),
                  vg = v.detach().requires_grad_();
    const Dense dense = Run(call, qg, kg, vg, scale);
    (dense.out * dout).sum().backward();
    return {qg.grad(), kg.grad(), vg.grad()};
  }

  torch::Tensor LseRows(const PlannedCall& call, const CallState& state, int64_t heads) const override {
    return layout_ == LseLayout::kRows ? state.lse : LseRowsOfKernelLayout(call, state.lse, heads);
  }

 private:
  struct Dense {
    torch::Tensor out, lse;
  };
  static Dense Run(const PlannedCall& call, const torch::Tensor& q, const torch::Tensor& k,
                   const torch::Tensor& v, double scale) {
    const std::vector<int32_t>& cu_q = call.plan.cu_seqlens_q;
    const std::vector<int32_t>& cu_k = call.plan.cu_seqlens_k;
    std::vector<torch::Tensor> outs, lses;
    for (size_t b = 0; b + 1 < cu_q.size(); ++b) {
      const int64_t n_q = cu_q[b + 1] - cu_q[b], n_k = cu_k[b + 1] - cu_k[b];
      if (n_q == 0) continue;
      torch::Tensor qb = q.narrow(0, cu_q[b], n_q).transpose(0, 1);  // [heads, n_q, dim]
      torch::Tensor kb = k.narrow(0, cu_k[b], n_k).transpose(0, 1);
      torch::Tensor vb = v.narrow(0, cu_k[b], n_k).transpose(0, 1);
      torch::Tensor scores = torch::matmul(qb, kb.transpose(1, 2)) * scale;
      if (call.plan.causal) {
        torch::Tensor t = torch::arange(n_q).unsqueeze(1), s = torch::arange(n_k).unsqueeze(0);
        scores = scores.masked_fill(s > t + (n_k - n_q), -std::numeric_limits<double>::infinity());
      }
      lses.push_back(torch::logsumexp(scores, -1).transpose(0, 1));
      outs.push_back(torch::matmul(torch::softmax(scores, -1), vb).transpose(0, 1));
    }
    return {torch::cat(outs, 0), torch::cat(lses, 0).to(torch::kFloat)};
  }

  LseLayout layout_;
};

TEST(VarlenCallsTest, EveryMaskComposedFromCallsIsTheWholeMask) {
  std::mt19937_64 rng(testing::RunSeed() + 200);
  const DenseCallKernel kernel;
  for (int trial = 0; trial < 3; ++trial) {
    for (MaskKind mask : testing::kAllMasks) {
      PackedCase c = testing::RandomCase(&rng, 5, 40, 2, 8, mask);
      c.prefixes[0] = 0;  // a sequence without prefix and, below, one that is all prefix
      c.prefixes[1] = c.lengths[1];
      c.prefix_lengths = torch::tensor(c.prefixes, torch::kInt);
      SCOPED_TRACE(testing::Describe(c));
      const double scale = 1.0 / std::sqrt(8.0);
      const torch::Tensor q = c.q.to(torch::kDouble), k = c.k.to(torch::kDouble),
                          v = c.v.to(torch::kDouble);
      const std::vector<PlannedCall> calls =
          PlanCalls(c.cu_seqlens, c.prefix_lengths, mask, torch::kCPU);
      const CallsForward forward = RunCallsForward(kernel, calls, q, k, v, scale);
      const torch::Tensor lse = CallsLse(kernel, calls, forward, c.heads);
      const std::vector<torch::Tensor> grads = RunCallsBackward(
          kernel, calls, forward.calls, c.dout.to(torch::kDouble), q, k, v, scale);
      const testing::Reference ref = testing::ComputeReference(c, scale);
      EXPECT_LE(RelativeError(forward.out, ref.out), 1e-12);
      EXPECT_LE(RelativeError(lse, ref.lse), 1e-6);  // the op's log-sum-exp is float32
      EXPECT_LE(RelativeError(grads[0], ref.dq), 1e-12);
      EXPECT_LE(RelativeError(grads[1], ref.dk), 1e-12);
      EXPECT_LE(RelativeError(grads[2], ref.dv), 1e-12);
      EXPECT_EQ(grads[1].scalar_type(), torch::kDouble);
    }
  }
}

// Either layout of LibTorch's kernels (head-major, or padded per sequence, with calls where some
// sequences have no queries) gives every query row its own log-sum-exp.
TEST(VarlenCallsTest, LseOfEitherKernelLayoutLandsOnItsQueryRows) {
  std::mt19937_64 rng(testing::RunSeed() + 210);
  for (LseLayout layout : {LseLayout::kHeadMajor, LseLayout::kPaddedBySequence}) {
    const DenseCallKernel kernel(layout);
    for (MaskKind mask : testing::kAllMasks) {
      PackedCase c = testing::RandomCase(&rng, 6, 50, 3, 8, mask);
      c.prefixes[0] = 0;
      c.prefixes[1] = c.lengths[1];
      c.prefix_lengths = torch::tensor(c.prefixes, torch::kInt);
      SCOPED_TRACE(testing::Describe(c) + (layout == LseLayout::kHeadMajor ? " head-major" : " padded"));
      const double scale = 1.0 / std::sqrt(8.0);
      const std::vector<PlannedCall> calls = PlanCalls(c.cu_seqlens, c.prefix_lengths, mask, torch::kCPU);
      const CallsForward forward = RunCallsForward(kernel, calls, c.q.to(torch::kDouble), c.k.to(torch::kDouble),
                                                   c.v.to(torch::kDouble), scale);
      const torch::Tensor lse = CallsLse(kernel, calls, forward, c.heads);
      EXPECT_TRUE(lse.isfinite().all().item<bool>());
      EXPECT_LE(RelativeError(lse, testing::ComputeReference(c, scale).lse), 1e-6);
    }
  }
}

TEST(VarlenCallsTest, LseOfAnotherShapeIsAnErrorNamingIt) {
  const torch::Tensor cu = torch::tensor(std::vector<int32_t>{0, 3, 5}, torch::kInt);
  const std::vector<PlannedCall> calls = PlanCalls(cu, torch::Tensor(), MaskKind::kBidirectional, torch::kCPU);
  ASSERT_EQ(calls.size(), 1u);
  for (const torch::Tensor& lse : {torch::zeros({2, 4}), torch::zeros({3, 2, 32}), torch::zeros({2, 2, 2})}) {
    try {
      LseRowsOfKernelLayout(calls[0], lse, 2);
      ADD_FAILURE() << "accepted a log-sum-exp of shape " << lse.sizes();
    } catch (const c10::Error& e) {
      EXPECT_NE(std::string(e.what_without_backtrace()).find("unexpected log-sum-exp shape"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace roboloop::kernels
