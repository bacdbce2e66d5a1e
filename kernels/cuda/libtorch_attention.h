// The varlen attention ops' default CUDA path (issue 22, req 1): LibTorch's own kernels on
// packed sequences, FlashAttention (at::_flash_attention_forward/_backward) for bfloat16 and
// float16 and memory-efficient attention (at::_efficient_attention_forward/_backward) for
// float32, each mask run as the varlen calls of kernels/varlen_attention_plan.h. No padding and
// no dense mask. varlen_attention.cc checks every input and calls this for CUDA tensors that
// LibTorchAttentionServes(); the rest go to the own kernels of attention_cuda.h.
//
// Thread-safety: calls on distinct outputs may run concurrently.
#pragma once

#include <string>

#include <torch/torch.h>

#include "kernels/attention_core.h"

namespace roboloop::kernels::cuda {

// Why LibTorch's kernels cannot take `q` (checked CUDA inputs [tokens, heads, head_dim]), or ""
// when they can: bfloat16/float16 need FlashAttention's GPUs (compute capability >= 8.0) and a
// head dim that is a multiple of 8 up to 256; float32 a head dim that is a multiple of 4 up to
// 256.
std::string LibTorchAttentionRefusal(const torch::Tensor& q);

// Forward results in the op's layout.
struct LibTorchAttentionOutput {
  torch::Tensor out;  // [tokens, heads, head_dim], q's dtype
  torch::Tensor lse;  // [tokens, heads] float32
};

// The differentiable op over checked inputs: q, k, v alike on one CUDA device; cu_seqlens and
// prefix_lengths int32 on the CPU (prefix_lengths read when UsesPrefix(mask)); scale > 0.
// Returns out; autograd runs LibTorch's backward kernels. Throws c10::Error from the kernels.
torch::Tensor LibTorchVarlenAttention(const torch::Tensor& q, const torch::Tensor& k,
                                      const torch::Tensor& v, const torch::Tensor& cu_seqlens,
                                      const torch::Tensor& prefix_lengths, MaskKind mask,
                                      double scale);

// The same op over one packed projection qkv [tokens, 3, heads, head_dim] whose slices are
// inputs as above. The kernels take contiguous q, k, v: one copy takes qkv apart (the three
// slices' copies in one). Autograd gives qkv one gradient, dq, dk, dv stacked, where the
// slices' gradients would be three zero-filled qkv-sized tensors that autograd sums; the
// values are the same (sums with zeros are exact). Same errors.
torch::Tensor LibTorchVarlenAttentionQkv(const torch::Tensor& qkv, const torch::Tensor& cu_seqlens,
                                         const torch::Tensor& prefix_lengths, MaskKind mask,
                                         double scale);

// The forward without autograd, with the log-sum-exp of each row. Same inputs and errors.
LibTorchAttentionOutput LibTorchAttentionForward(const torch::Tensor& q, const torch::Tensor& k,
                                                 const torch::Tensor& v,
                                                 const torch::Tensor& cu_seqlens,
                                                 const torch::Tensor& prefix_lengths,
                                                 MaskKind mask, double scale);

// Gradients {dq, dk, dv} of sum(out * dout), each in q's dtype. The kernels keep the
// log-sum-exp in a layout of their own, so this reruns the forward for it instead of reading
// the caller's out and lse. Same inputs and errors.
std::vector<torch::Tensor> LibTorchAttentionBackward(const torch::Tensor& q,
                                                     const torch::Tensor& k,
                                                     const torch::Tensor& v,
                                                     const torch::Tensor& cu_seqlens,
                                                     const torch::Tensor& prefix_lengths,
                                                     const torch::Tensor& dout, MaskKind mask,
                                                     double scale);

}  // namespace roboloop::kernels::cuda
