// LibTorch's FlashAttention and memory-efficient kernels behind the varlen attention ops, as the
// per-call kernel of kernels/varlen_calls.h, and the autograd op over them.
#include "kernels/cuda/libtorch_attention.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <vector>

#include "kernels/varlen_calls.h"

namespace roboloop::kernels::cuda {
namespace {

// The memory-efficient kernels' custom_mask_type values (sdp::CustomMaskType).
constexpr int64_t kNoCustomMask = 0;
constexpr int64_t kCausalFromBottomRight = 2;

bool UsesFlash(const torch::Tensor& q) { return q.scalar_type() != torch::kFloat; }

// FlashAttention for bfloat16/float16 q, memory-efficient attention for float32; no dropout,
// so the kernels' random-state tensors are carried along unread.
class LibTorchCallKernel : public VarlenCallKernel {
 public:
  CallState Forward(const PlannedCall& call, const torch::Tensor& q, const torch::Tensor& k,
                    const torch::Tensor& v, double scale) const override {
    const VarlenCall& p = call.plan;
    if (UsesFlash(q)) {
      auto [out, lse, rng_state, unused, debug_mask] = at::_flash_attention_forward(
          q, k, v, call.cu_q, call.cu_k, p.max_seqlen_q, p.max_seqlen_k, /*dropout_p=*/0.0,
          p.causal, /*return_debug_mask=*/false, scale);
      return {out, lse, rng_state, unused};
    }
    auto [out, lse, seed, offset, max_q, max_k] = at::_efficient_attention_forward(
        q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), /*bias=*/std::nullopt, call.cu_q,
        call.cu_k, p.max_seqlen_q, p.max_seqlen_k, /*dropout_p=*/0.0, MaskType(p),
        /*compute_log_sumexp=*/true, scale);
    return {out.squeeze(0), lse, seed, offset};
  }

  std::vector<torch::Tensor> Backward(const PlannedCall& call, const CallState& state,
                                      const torch::Tensor& dout, const torch::Tensor& q,
                                      const torch::Tensor& k, const torch::Tensor& v,
                                      double scale) const override {
    const VarlenCall& p = call.plan;
    if (UsesFlash(q)) {
      auto [dq, dk, dv] = at::_flash_attention_backward(
          dout, q, k, v, state.out, state.lse, call.cu_q, call.cu_k, p.max_seqlen_q,
          p.max_seqlen_k, /*dropout_p=*/0.0, p.causal, state.state0, state.state1, scale);
      return {dq, dk, dv};
    }
    auto [dq, dk, dv, dbias] = at::_efficient_attention_backward(
        dout.unsqueeze(0), q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), /*bias=*/std::nullopt,
        state.out.unsqueeze(0), call.cu_q, call.cu_k, p.max_seqlen_q, p.max_seqlen_k, state.lse,
        /*dropout_p=*/0.0, state.state0, state.state1, MaskType(p), /*bias_requires_grad=*/false,
        scale);
    return {dq.squeeze(0), dk.squeeze(0), dv.squeeze(0)};
  }

  // FlashAttention's varlen layout is [heads, queries]; a padded [sequences, heads, >= longest]
  // one (memory-efficient attention) is gathered.
  torch::Tensor LseRows(const PlannedCall& call, const CallState& state,
                        int64_t heads) const override {
    return LseRowsOfKernelLayout(call, state.lse, heads);
  }

 private:
  static int64_t MaskType(const VarlenCall& p) {
    return p.causal ? kCausalFromBottomRight : kNoCustomMask;
  }
};

const LibTorchCallKernel kKernel;

// The call states of a forward whose `out` autograd saved (per call: lse, state0, state1).
std::vector<CallState> SavedStates(const std::vector<PlannedCall>& calls, const torch::Tensor& out,
                                   const std::vector<torch::Tensor>& saved, size_t first) {
  std::vector<CallState> states;
  for (size_t c = 0; c < calls.size(); ++c) {
    states.push_back({SelectRows(out, calls[c].query_index), saved[first + 3 * c],
                      saved[first + 3 * c + 1], saved[first + 3 * c + 2]});
  }
  return states;
}

// Runs the forward on contiguous q, k, v [tokens, heads, head_dim] and saves what
// BackwardOfSaved needs in ctx.
torch::Tensor ForwardAndSave(torch::autograd::AutogradContext* ctx, const torch::Tensor& q,
                             const torch::Tensor& k, const torch::Tensor& v,
                             const torch::Tensor& cu_seqlens, const torch::Tensor& prefix_lengths,
                             int64_t mask, double scale) {
  const std::vector<PlannedCall> calls =
      PlanCalls(cu_seqlens, prefix_lengths, static_cast<MaskKind>(mask), q.device());
  CallsForward f = RunCallsForward(kKernel, calls, q, k, v, scale);
  std::vector<torch::Tensor> saved = {q, k, v, cu_seqlens, prefix_lengths, f.out};
  for (const CallState& state : f.calls) {
    saved.insert(saved.end(), {state.lse, state.state0, state.state1});
  }
  ctx->save_for_backward(saved);
  ctx->saved_data["mask"] = mask;
  ctx->saved_data["scale"] = scale;
  return f.out;
}

// {dq, dk, dv} of the forward that ForwardAndSave saved in ctx, for the gradient `dout` of its out.
std::vector<torch::Tensor> BackwardOfSaved(torch::autograd::AutogradContext* ctx,
                                           const torch::Tensor& dout) {
  const std::vector<torch::Tensor> saved = ctx->get_saved_variables();
  const torch::Tensor& q = saved[0];
  c10::cuda::CUDAGuard guard(q.device());
  const auto mask = static_cast<MaskKind>(ctx->saved_data["mask"].toInt());
  const std::vector<PlannedCall> calls = PlanCalls(saved[3], saved[4], mask, q.device());
  return RunCallsBackward(kKernel, calls, SavedStates(calls, saved[5], saved, 6), dout.contiguous(), q,
                          saved[1], saved[2], ctx->saved_data["scale"].toDouble());
}

class LibTorchAttentionFunction : public torch::autograd::Function<LibTorchAttentionFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& q,
                               const torch::Tensor& k, const torch::Tensor& v,
                               const torch::Tensor& cu_seqlens,
                               const torch::Tensor& prefix_lengths, int64_t mask, double scale) {
    c10::cuda::CUDAGuard guard(q.device());
    return ForwardAndSave(ctx, q.contiguous(), k.contiguous(), v.contiguous(), cu_seqlens,
                          prefix_lengths, mask, scale);
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grad_outputs) {
    std::vector<torch::Tensor> grads = BackwardOfSaved(ctx, grad_outputs[0]);
    return {grads[0], grads[1], grads[2], torch::Tensor(), torch::Tensor(), torch::Tensor(),
            torch::Tensor()};
  }
};

// The op over a packed qkv [tokens, 3, heads, head_dim]: one copy takes q, k, v apart into
// contiguous tensors, and the backward stacks dq, dk, dv into the one gradient of qkv.
class LibTorchAttentionQkvFunction : public torch::autograd::Function<LibTorchAttentionQkvFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& qkv,
                               const torch::Tensor& cu_seqlens,
                               const torch::Tensor& prefix_lengths, int64_t mask, double scale) {
    c10::cuda::CUDAGuard guard(qkv.device());
    const torch::Tensor parts = qkv.permute({1, 0, 2, 3}).contiguous();  // [3, tokens, heads, head_dim]
    return ForwardAndSave(ctx, parts[0], parts[1], parts[2], cu_seqlens, prefix_lengths, mask, scale);
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grad_outputs) {
    const std::vector<torch::Tensor> grads = BackwardOfSaved(ctx, grad_outputs[0]);
    return {torch::stack(grads, 1), torch::Tensor(), torch::Tensor(), torch::Tensor(),
            torch::Tensor()};
  }
};

}  // namespace

std::string LibTorchAttentionRefusal(const torch::Tensor& q) {
  const int64_t head_dim = q.size(2);
  if (UsesFlash(q)) {
    const cudaDeviceProp* properties = at::cuda::getDeviceProperties(q.device().index());
    if (properties->major < 8) {
      return "FlashAttention needs compute capability >= 8.0; " + std::string(properties->name) +
             " has " + std::to_string(properties->major) + "." + std::to_string(properties->minor);
    }
    if (head_dim % 8 != 0 || head_dim > 256) {
      return "FlashAttention takes head dims that are multiples of 8 up to 256, got " +
             std::to_string(head_dim);
    }
    return "";
  }
  if (head_dim % 4 != 0 || head_dim > 256) {
    return "memory-efficient attention takes float32 head dims that are multiples of 4 up to 256, "
           "got " + std::to_string(head_dim);
  }
  return "";
}

torch::Tensor LibTorchVarlenAttention(const torch::Tensor& q, const torch::Tensor& k,
                                      const torch::Tensor& v, const torch::Tensor& cu_seqlens,
                                      const torch::Tensor& prefix_lengths, MaskKind mask,
                                      double scale) {
  return LibTorchAttentionFunction::apply(q, k, v, cu_seqlens, prefix_lengths,
                                          static_cast<int64_t>(mask), scale);
}

torch::Tensor LibTorchVarlenAttentionQkv(const torch::Tensor& qkv, const torch::Tensor& cu_seqlens,
                                         const torch::Tensor& prefix_lengths, MaskKind mask,
                                         double scale) {
  return LibTorchAttentionQkvFunction::apply(qkv, cu_seqlens, prefix_lengths,
                                             static_cast<int64_t>(mask), scale);
}

LibTorchAttentionOutput LibTorchAttentionForward(const torch::Tensor& q, const torch::Tensor& k,
                                                 const torch::Tensor& v,
                                                 const torch::Tensor& cu_seqlens,
                                                 const torch::Tensor& prefix_lengths,
                                                 MaskKind mask, double scale) {
  c10::cuda::CUDAGuard guard(q.device());
  const std::vector<PlannedCall> calls = PlanCalls(cu_seqlens, prefix_lengths, mask, q.device());
  const CallsForward f =
      RunCallsForward(kKernel, calls, q.contiguous(), k.contiguous(), v.contiguous(), scale);
  return {f.out, CallsLse(kKernel, calls, f, q.size(1))};
}

std::vector<torch::Tensor> LibTorchAttentionBackward(const torch::Tensor& q,
                                                     const torch::Tensor& k,
                                                     const torch::Tensor& v,
                                                     const torch::Tensor& cu_seqlens,
                                                     const torch::Tensor& prefix_lengths,
                                                     const torch::Tensor& dout, MaskKind mask,
                                                     double scale) {
  c10::cuda::CUDAGuard guard(q.device());
  const torch::Tensor qc = q.contiguous(), kc = k.contiguous(), vc = v.contiguous();
  const std::vector<PlannedCall> calls = PlanCalls(cu_seqlens, prefix_lengths, mask, q.device());
  const CallsForward f = RunCallsForward(kKernel, calls, qc, kc, vc, scale);
  return RunCallsBackward(kKernel, calls, f.calls, dout.to(q.scalar_type()).contiguous(), qc, kc,
                          vc, scale);
}

}  // namespace roboloop::kernels::cuda
