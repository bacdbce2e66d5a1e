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

// One call, sequence by sequence, as plain float64 ops with autograd for the backward. Its
// log-sum-exp state is already [n_q, heads].
class DenseCallKernel : public VarlenCallKernel {
 public:
  CallState Forward(const PlannedCall& call, const torch::Tensor& q, const torch::Tensor& k,
                    const torch::Tensor& v, double scale) const override {
    torch::NoGradGuard no_grad;
    const Dense dense = Run(call, q, k, v, scale);
    return {dense.out, dense.lse, torch::Tensor(), torch::Tensor()};
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

  torch::Tensor LseRows(const PlannedCall&, const CallState& state, int64_t) const override {
    return state.lse;
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

}  // namespace
}  // namespace roboloop::kernels
