// LibTorch's FlashAttention and memory-efficient kernels behind the varlen attention ops: the
// mask's varlen calls (varlen_attention_plan.h) gathered from the packed tokens, run, and their
// rows placed back; gradients of keys seen by two calls are summed in float32.
#include "kernels/cuda/libtorch_attention.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <vector>

#include "kernels/varlen_attention_plan.h"

namespace roboloop::kernels::cuda {
namespace {

// The memory-efficient kernels' custom_mask_type values (sdp::CustomMaskType).
constexpr int64_t kNoCustomMask = 0;
constexpr int64_t kCausalFromBottomRight = 2;

torch::Tensor ToDevice(const std::vector<int32_t>& values, torch::ScalarType dtype,
                       const torch::Device& device) {
  torch::Tensor host = torch::from_blob(const_cast<int32_t*>(values.data()),
                                        {static_cast<int64_t>(values.size())}, torch::kInt);
  return host.to(torch::TensorOptions().device(device).dtype(dtype));
}

// One planned call with its index vectors on the device.
struct DeviceCall {
  VarlenCall plan;
  torch::Tensor query_index, key_index;  // int64 packed-token indices; undefined: every token
  torch::Tensor cu_q, cu_k;              // int32 offsets
  torch::Tensor row_sequence, row_position;  // int64 per query: its sequence, its row in it
};

std::vector<DeviceCall> PlanOnDevice(const torch::Tensor& cu_seqlens,
                                     const torch::Tensor& prefix_lengths, MaskKind mask,
                                     const torch::Device& device) {
  const torch::Tensor cu = cu_seqlens.contiguous();
  const torch::Tensor prefix = prefix_lengths.contiguous();
  std::vector<DeviceCall> calls;
  for (VarlenCall& plan : PlanVarlenCalls(mask, cu.data_ptr<int32_t>(), cu.size(0) - 1,
                                          UsesPrefix(mask) ? prefix.data_ptr<int32_t>() : nullptr)) {
    DeviceCall call;
    if (!plan.queries.all) call.query_index = ToDevice(plan.queries.tokens, torch::kLong, device);
    if (!plan.keys.all) call.key_index = ToDevice(plan.keys.tokens, torch::kLong, device);
    call.cu_q = ToDevice(plan.cu_seqlens_q, torch::kInt, device);
    call.cu_k = ToDevice(plan.cu_seqlens_k, torch::kInt, device);
    std::vector<int32_t> sequence, position;
    for (size_t b = 0; b + 1 < plan.cu_seqlens_q.size(); ++b) {
      for (int32_t t = 0; t < plan.cu_seqlens_q[b + 1] - plan.cu_seqlens_q[b]; ++t) {
        sequence.push_back(static_cast<int32_t>(b));
        position.push_back(t);
      }
    }
    call.row_sequence = ToDevice(sequence, torch::kLong, device);
    call.row_position = ToDevice(position, torch::kLong, device);
    call.plan = std::move(plan);
    calls.push_back(std::move(call));
  }
  return calls;
}

torch::Tensor Select(const torch::Tensor& t, const torch::Tensor& index) {
  return index.defined() ? t.index_select(0, index) : t;
}

bool UsesFlash(const torch::Tensor& q) { return q.scalar_type() != torch::kFloat; }

// What a call's forward leaves for its backward: its output rows, the log-sum-exp in the
// kernel's own layout and the kernel's two random-state tensors (unused without dropout).
struct CallState {
  torch::Tensor out, lse, state0, state1;
};

CallState RunCallForward(const DeviceCall& call, const torch::Tensor& q, const torch::Tensor& k,
                         const torch::Tensor& v, double scale) {
  const VarlenCall& p = call.plan;
  if (UsesFlash(q)) {
    auto [out, lse, rng_state, unused, debug_mask] = at::_flash_attention_forward(
        q, k, v, call.cu_q, call.cu_k, p.max_seqlen_q, p.max_seqlen_k, /*dropout_p=*/0.0,
        p.causal, /*return_debug_mask=*/false, scale);
    return {out, lse, rng_state, unused};
  }
  auto [out, lse, seed, offset, max_q, max_k] = at::_efficient_attention_forward(
      q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), /*bias=*/std::nullopt, call.cu_q, call.cu_k,
      p.max_seqlen_q, p.max_seqlen_k, /*dropout_p=*/0.0,
      p.causal ? kCausalFromBottomRight : kNoCustomMask, /*compute_log_sumexp=*/true, scale);
  return {out.squeeze(0), lse, seed, offset};
}

// Gradients of one call's gathered q, k, v.
std::vector<torch::Tensor> RunCallBackward(const DeviceCall& call, const CallState& state,
                                           const torch::Tensor& dout, const torch::Tensor& q,
                                           const torch::Tensor& k, const torch::Tensor& v,
                                           double scale) {
  const VarlenCall& p = call.plan;
  if (UsesFlash(q)) {
    auto [dq, dk, dv] = at::_flash_attention_backward(
        dout, q, k, v, state.out, state.lse, call.cu_q, call.cu_k, p.max_seqlen_q, p.max_seqlen_k,
        /*dropout_p=*/0.0, p.causal, state.state0, state.state1, scale);
    return {dq, dk, dv};
  }
  auto [dq, dk, dv, dbias] = at::_efficient_attention_backward(
      dout.unsqueeze(0), q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), /*bias=*/std::nullopt,
      state.out.unsqueeze(0), call.cu_q, call.cu_k, p.max_seqlen_q, p.max_seqlen_k, state.lse,
      /*dropout_p=*/0.0, state.state0, state.state1,
      p.causal ? kCausalFromBottomRight : kNoCustomMask, /*bias_requires_grad=*/false, scale);
  return {dq.squeeze(0), dk.squeeze(0), dv.squeeze(0)};
}

// A call's log-sum-exp as [queries, heads]: FlashAttention's varlen layout is [heads, queries];
// a padded [sequences, heads, >= longest] one (memory-efficient attention) is gathered.
torch::Tensor LseRows(const DeviceCall& call, const torch::Tensor& lse, int64_t heads) {
  const int64_t rows = call.plan.query_count();
  if (lse.dim() == 2) {
    TORCH_CHECK(lse.size(0) == heads && lse.size(1) == rows, "varlen attention on CUDA: ",
                "unexpected log-sum-exp shape ", lse.sizes(), " for ", rows, " rows of ", heads,
                " heads");
    return lse.t();
  }
  TORCH_CHECK(lse.dim() == 3 && lse.size(1) == heads && lse.size(2) >= call.plan.max_seqlen_q,
              "varlen attention on CUDA: unexpected log-sum-exp shape ", lse.sizes());
  return lse.permute({0, 2, 1}).index({call.row_sequence, call.row_position});
}

struct Forward {
  torch::Tensor out;
  std::vector<CallState> calls;
};

Forward RunForward(const std::vector<DeviceCall>& calls, const torch::Tensor& q,
                   const torch::Tensor& k, const torch::Tensor& v, double scale) {
  Forward f;
  f.out = calls.size() == 1 && !calls[0].query_index.defined() ? torch::Tensor()
                                                                : torch::empty_like(q);
  for (const DeviceCall& call : calls) {
    CallState state = RunCallForward(call, Select(q, call.query_index), Select(k, call.key_index),
                                     Select(v, call.key_index), scale);
    if (f.out.defined()) {
      f.out.index_copy_(0, call.query_index, state.out);
    } else {
      f.out = state.out;
    }
    f.calls.push_back(std::move(state));
  }
  if (!f.out.defined()) f.out = torch::empty_like(q);
  return f;
}

std::vector<torch::Tensor> RunBackward(const std::vector<DeviceCall>& calls,
                                       const std::vector<CallState>& states,
                                       const torch::Tensor& dout, const torch::Tensor& q,
                                       const torch::Tensor& k, const torch::Tensor& v,
                                       double scale) {
  if (calls.size() == 1 && !calls[0].query_index.defined() && !calls[0].key_index.defined()) {
    return RunCallBackward(calls[0], states[0], dout, q, k, v, scale);
  }
  torch::Tensor dq = torch::zeros_like(q);
  torch::Tensor dk = torch::zeros(k.sizes(), k.options().dtype(torch::kFloat));
  torch::Tensor dv = torch::zeros(v.sizes(), v.options().dtype(torch::kFloat));
  for (size_t c = 0; c < calls.size(); ++c) {
    const DeviceCall& call = calls[c];
    std::vector<torch::Tensor> g = RunCallBackward(
        call, states[c], Select(dout, call.query_index), Select(q, call.query_index),
        Select(k, call.key_index), Select(v, call.key_index), scale);
    if (call.query_index.defined()) {
      dq.index_copy_(0, call.query_index, g[0]);
    } else {
      dq.copy_(g[0]);
    }
    if (call.key_index.defined()) {
      dk.index_add_(0, call.key_index, g[1].to(torch::kFloat));
      dv.index_add_(0, call.key_index, g[2].to(torch::kFloat));
    } else {
      dk.add_(g[1].to(torch::kFloat));
      dv.add_(g[2].to(torch::kFloat));
    }
  }
  return {dq, dk.to(q.scalar_type()), dv.to(q.scalar_type())};
}

// The call states of a forward whose `out` autograd saved (per call: lse, state0, state1).
std::vector<CallState> SavedStates(const std::vector<DeviceCall>& calls, const torch::Tensor& out,
                                   const std::vector<torch::Tensor>& saved, size_t first) {
  std::vector<CallState> states;
  for (size_t c = 0; c < calls.size(); ++c) {
    states.push_back({Select(out, calls[c].query_index), saved[first + 3 * c],
                      saved[first + 3 * c + 1], saved[first + 3 * c + 2]});
  }
  return states;
}

class LibTorchAttentionFunction : public torch::autograd::Function<LibTorchAttentionFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& q,
                               const torch::Tensor& k, const torch::Tensor& v,
                               const torch::Tensor& cu_seqlens,
                               const torch::Tensor& prefix_lengths, int64_t mask, double scale) {
    c10::cuda::CUDAGuard guard(q.device());
    const torch::Tensor qc = q.contiguous(), kc = k.contiguous(), vc = v.contiguous();
    const std::vector<DeviceCall> calls =
        PlanOnDevice(cu_seqlens, prefix_lengths, static_cast<MaskKind>(mask), q.device());
    Forward f = RunForward(calls, qc, kc, vc, scale);
    std::vector<torch::Tensor> saved = {qc, kc, vc, cu_seqlens, prefix_lengths, f.out};
    for (const CallState& state : f.calls) {
      saved.insert(saved.end(), {state.lse, state.state0, state.state1});
    }
    ctx->save_for_backward(saved);
    ctx->saved_data["mask"] = mask;
    ctx->saved_data["scale"] = scale;
    return f.out;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grad_outputs) {
    const std::vector<torch::Tensor> saved = ctx->get_saved_variables();
    const torch::Tensor& q = saved[0];
    c10::cuda::CUDAGuard guard(q.device());
    const auto mask = static_cast<MaskKind>(ctx->saved_data["mask"].toInt());
    const std::vector<DeviceCall> calls = PlanOnDevice(saved[3], saved[4], mask, q.device());
    std::vector<torch::Tensor> grads =
        RunBackward(calls, SavedStates(calls, saved[5], saved, 6), grad_outputs[0].contiguous(), q,
                    saved[1], saved[2], ctx->saved_data["scale"].toDouble());
    return {grads[0], grads[1], grads[2], torch::Tensor(), torch::Tensor(), torch::Tensor(),
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

LibTorchAttentionOutput LibTorchAttentionForward(const torch::Tensor& q, const torch::Tensor& k,
                                                 const torch::Tensor& v,
                                                 const torch::Tensor& cu_seqlens,
                                                 const torch::Tensor& prefix_lengths,
                                                 MaskKind mask, double scale) {
  c10::cuda::CUDAGuard guard(q.device());
  const std::vector<DeviceCall> calls = PlanOnDevice(cu_seqlens, prefix_lengths, mask, q.device());
  Forward f = RunForward(calls, q.contiguous(), k.contiguous(), v.contiguous(), scale);
  torch::Tensor lse = torch::empty({q.size(0), q.size(1)}, q.options().dtype(torch::kFloat));
  for (size_t c = 0; c < calls.size(); ++c) {
    torch::Tensor rows = LseRows(calls[c], f.calls[c].lse, q.size(1));
    if (calls[c].query_index.defined()) {
      lse.index_copy_(0, calls[c].query_index, rows);
    } else {
      lse.copy_(rows);
    }
  }
  return {f.out, lse};
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
  const std::vector<DeviceCall> calls = PlanOnDevice(cu_seqlens, prefix_lengths, mask, q.device());
  const Forward f = RunForward(calls, qc, kc, vc, scale);
  return RunBackward(calls, f.calls, dout.to(q.scalar_type()).contiguous(), qc, kc, vc, scale);
}

}  // namespace roboloop::kernels::cuda
