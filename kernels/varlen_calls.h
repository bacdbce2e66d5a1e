// A mask's varlen calls (varlen_attention_plan.h) run on packed tensors through any per-call
// kernel: the calls' queries and keys gathered, their rows placed back, and the key gradients
// of calls that share keys summed in float32 (at least). Device-agnostic: cuda/libtorch_attention.cc runs
// it with LibTorch's CUDA kernels, and its test with a float64 reference kernel on the CPU.
#pragma once

#include <vector>

#include <torch/torch.h>

#include "kernels/attention_core.h"
#include "kernels/varlen_attention_plan.h"

namespace roboloop::kernels {

// One planned call with its index vectors on the tensors' device.
struct PlannedCall {
  VarlenCall plan;
  torch::Tensor query_index, key_index;      // int64 packed-token indices; undefined: every token
  torch::Tensor cu_q, cu_k;                  // int32 offsets (plan.cu_seqlens_q/_k)
  torch::Tensor row_sequence, row_position;  // int64 per query: its sequence, its row in it
};

// What a call's forward leaves for its backward: its output rows [n_q, heads, head_dim], the
// log-sum-exp in the kernel's own layout and two tensors of kernel state.
struct CallState {
  torch::Tensor out, lse, state0, state1;
};

// The attention of one call over its gathered, contiguous q [n_q, heads, head_dim] and k, v
// [n_k, heads, head_dim].
class VarlenCallKernel {
 public:
  virtual ~VarlenCallKernel() = default;
  // Runs the forward; `out` in q's dtype.
  virtual CallState Forward(const PlannedCall& call, const torch::Tensor& q,
                            const torch::Tensor& k, const torch::Tensor& v,
                            double scale) const = 0;
  // {dq, dk, dv} of sum(out * dout), in q's dtype, from the forward's state.
  virtual std::vector<torch::Tensor> Backward(const PlannedCall& call, const CallState& state,
                                              const torch::Tensor& dout, const torch::Tensor& q,
                                              const torch::Tensor& k, const torch::Tensor& v,
                                              double scale) const = 0;
  // The state's log-sum-exp as float32 [n_q, heads].
  virtual torch::Tensor LseRows(const PlannedCall& call, const CallState& state,
                                int64_t heads) const = 0;
};

// Plans `mask` over checked CPU int32 cu_seqlens / prefix_lengths (the latter read when
// UsesPrefix(mask)) and moves the index vectors to `device`.
std::vector<PlannedCall> PlanCalls(const torch::Tensor& cu_seqlens,
                                   const torch::Tensor& prefix_lengths, MaskKind mask,
                                   const torch::Device& device);

// A packed forward: out [tokens, heads, head_dim] in q's dtype and each call's state.
struct CallsForward {
  torch::Tensor out;
  std::vector<CallState> calls;
};

// Runs every call on contiguous q, k, v [tokens, heads, head_dim].
CallsForward RunCallsForward(const VarlenCallKernel& kernel, const std::vector<PlannedCall>& calls,
                             const torch::Tensor& q, const torch::Tensor& k,
                             const torch::Tensor& v, double scale);

// The log-sum-exp of a packed forward, float32 [tokens, heads].
torch::Tensor CallsLse(const VarlenCallKernel& kernel, const std::vector<PlannedCall>& calls,
                       const CallsForward& forward, int64_t heads);

// {dq, dk, dv} of sum(out * dout) for a packed forward's calls and states; dout contiguous in
// q's dtype.
std::vector<torch::Tensor> RunCallsBackward(const VarlenCallKernel& kernel,
                                            const std::vector<PlannedCall>& calls,
                                            const std::vector<CallState>& states,
                                            const torch::Tensor& dout, const torch::Tensor& q,
                                            const torch::Tensor& k, const torch::Tensor& v,
                                            double scale);

// A call's log-sum-exp as float32 [n_q, heads] from either layout LibTorch's varlen kernels
// keep it in: FlashAttention's [heads, n_q], or memory-efficient attention's padded
// [sequences, heads, >= plan.max_seqlen_q] (row t of sequence b at [b, :, t]). Throws c10::Error
// for any other shape.
torch::Tensor LseRowsOfKernelLayout(const PlannedCall& call, const torch::Tensor& lse, int64_t heads);

// Rows `index` of t (all of t when index is undefined).
torch::Tensor SelectRows(const torch::Tensor& t, const torch::Tensor& index);

}  // namespace roboloop::kernels
