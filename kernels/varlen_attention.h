// Packed variable-length scaled dot-product attention for LibTorch (issue 5, req 1-3).
//
// Sequences are packed without padding: q, k, v are [total_tokens, heads, head_dim] and
// sequence b occupies tokens [cu_seqlens[b], cu_seqlens[b+1]). Every query attends only to
// keys of its own sequence, under one mask kind for the batch. The kernel tiles the
// computation (memory linear in sequence length), runs on torch's intra-op threads, and gives
// bitwise identical results for any thread count. A sequence's result does not depend on the
// other sequences packed with it, so this op is also the batch-invariant attention.
//
// Thread-safety: all functions may be called concurrently on distinct output tensors.
#pragma once

#include <torch/torch.h>

#include "absl/status/statusor.h"
#include "kernels/attention_core.h"

namespace roboloop::kernels {

// Settings of one attention call.
struct VarlenAttentionOptions {
  MaskKind mask = MaskKind::kBidirectional;  // which keys each query sees
  double softmax_scale = 0.0;                // multiplies q.k; 0 means 1/sqrt(head_dim)
};

// The forward's results.
struct VarlenAttentionOutput {
  torch::Tensor out;  // [total_tokens, heads, head_dim], dtype of q
  torch::Tensor lse;  // [total_tokens, heads] fp32 log-sum-exp of the scaled, masked scores
};

// The backward's results, each shaped and typed like its input.
struct VarlenAttentionGrads {
  torch::Tensor dq;
  torch::Tensor dk;
  torch::Tensor dv;
};

// Forward pass without autograd. q, k, v: one device, same dtype (float32, bfloat16 or
// float16), same shape [total_tokens, heads, head_dim]. On the CPU, roboloop's kernels compute
// in fp32 and round back. CUDA tensors run on LibTorch's kernels (kernels/cuda/
// libtorch_attention.h: FlashAttention for bfloat16/float16, memory-efficient attention for
// float32) where those take the head dim and GPU, else on roboloop's own CUDA kernels
// (head_dim <= 256, fp32 inside).
// cu_seqlens: CPU int32 [batch + 1] (on the CPU for CUDA inputs too: the host checks and
// plans the calls), starting at 0, non-decreasing, ending at total_tokens.
// prefix_lengths: CPU int32 [batch] with 0 <= prefix <= length, required for the masks that
// UsesPrefix() and ignored (may be undefined) otherwise. Returns InvalidArgument naming the
// bad input.
absl::StatusOr<VarlenAttentionOutput> VarlenAttentionForward(
    const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
    const torch::Tensor& cu_seqlens, const torch::Tensor& prefix_lengths,
    const VarlenAttentionOptions& options);

// Gradients of sum(out * dout) with respect to q, k, v, given the forward's `out` and `lse`
// for the same inputs and options. Same checks as the forward, plus out/dout shaped like q and
// everything on q's device. On LibTorch's CUDA kernels, which keep the log-sum-exp in a layout
// of their own, the forward is run again instead of reading out and lse.
absl::StatusOr<VarlenAttentionGrads> VarlenAttentionBackward(
    const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
    const torch::Tensor& cu_seqlens, const torch::Tensor& prefix_lengths,
    const torch::Tensor& out, const torch::Tensor& lse, const torch::Tensor& dout,
    const VarlenAttentionOptions& options);

// The differentiable op: returns `out` as a tensor that autograd can back-propagate through
// to q, k and v (a torch::autograd::Function whose backward calls the kernels above).
// Inputs are checked before anything runs.
absl::StatusOr<torch::Tensor> VarlenAttention(const torch::Tensor& q, const torch::Tensor& k,
                                              const torch::Tensor& v,
                                              const torch::Tensor& cu_seqlens,
                                              const torch::Tensor& prefix_lengths,
                                              const VarlenAttentionOptions& options);

// The same op over one packed projection: qkv [total_tokens, 3, heads, head_dim] holds q, k, v
// as its three slices (a fused q/k/v linear's output viewed so). Returns out [total_tokens,
// heads, head_dim]; autograd gives one gradient shaped like qkv. On the CPU and the own CUDA
// kernels the kernels read q, k, v in place and write that gradient in place, so neither the
// forward nor the backward copies q, k, v apart or back together, and results are bitwise
// equal to VarlenAttention on the three slices. LibTorch's kernels take contiguous q, k, v and
// return their own gradients: one copy takes qkv apart and one stacks dq, dk, dv
// (cuda::LibTorchVarlenAttentionQkv). Same checks, on the slices, plus qkv's own shape.
absl::StatusOr<torch::Tensor> VarlenAttentionQkv(const torch::Tensor& qkv,
                                                 const torch::Tensor& cu_seqlens,
                                                 const torch::Tensor& prefix_lengths,
                                                 const VarlenAttentionOptions& options);

// Name of the kernel ISA in use ("avx512", "avx2" or "portable").
const char* VarlenAttentionIsa();

}  // namespace roboloop::kernels
