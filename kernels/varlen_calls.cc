#include "kernels/varlen_calls.h"

#include <utility>

#include "kernels/host_to_device.h"

namespace roboloop::kernels {
namespace {

// Whether the plan is one call over every query and key (nothing to gather or place).
bool OneWholeCall(const std::vector<PlannedCall>& calls) {
  return calls.size() == 1 && !calls[0].query_index.defined() && !calls[0].key_index.defined();
}

// Writes `rows` into rows `index` of `target` (all of it when index is undefined).
void PlaceRows(torch::Tensor& target, const torch::Tensor& index, const torch::Tensor& rows) {
  if (index.defined()) {
    target.index_copy_(0, index, rows);
  } else {
    target.copy_(rows);
  }
}

// Adds `rows` to rows `index` of `target` (all of it when index is undefined), in target's
// dtype.
void AddRows(torch::Tensor& target, const torch::Tensor& index, const torch::Tensor& rows) {
  if (index.defined()) {
    target.index_add_(0, index, rows.to(target.scalar_type()));
  } else {
    target.add_(rows.to(target.scalar_type()));
  }
}

}  // namespace

torch::Tensor SelectRows(const torch::Tensor& t, const torch::Tensor& index) {
  return index.defined() ? t.index_select(0, index) : t;
}

torch::Tensor LseRowsOfKernelLayout(const PlannedCall& call, const torch::Tensor& lse, int64_t heads) {
  const int64_t rows = call.plan.query_count();
  if (lse.dim() == 2) {
    TORCH_CHECK(lse.size(0) == heads && lse.size(1) == rows, "varlen attention: unexpected log-sum-exp shape ",
                lse.sizes(), " for ", rows, " rows of ", heads, " heads");
    return lse.t();
  }
  TORCH_CHECK(lse.dim() == 3 && lse.size(0) == static_cast<int64_t>(call.plan.cu_seqlens_q.size()) - 1 &&
                  lse.size(1) == heads && lse.size(2) >= call.plan.max_seqlen_q,
              "varlen attention: unexpected log-sum-exp shape ", lse.sizes());
  return lse.permute({0, 2, 1}).index({call.row_sequence, call.row_position});
}

std::vector<PlannedCall> PlanCalls(const torch::Tensor& cu_seqlens,
                                   const torch::Tensor& prefix_lengths, MaskKind mask,
                                   const torch::Device& device) {
  const torch::Tensor cu = cu_seqlens.contiguous();
  const torch::Tensor prefix = UsesPrefix(mask) ? prefix_lengths.contiguous() : torch::Tensor();
  std::vector<PlannedCall> calls;
  for (VarlenCall& plan : PlanVarlenCalls(mask, cu.data_ptr<int32_t>(), cu.size(0) - 1,
                                          prefix.defined() ? prefix.data_ptr<int32_t>() : nullptr)) {
    PlannedCall call;
    if (!plan.queries.all) call.query_index = IndexTensorOn(plan.queries.tokens, torch::kLong, device);
    if (!plan.keys.all) call.key_index = IndexTensorOn(plan.keys.tokens, torch::kLong, device);
    call.cu_q = IndexTensorOn(plan.cu_seqlens_q, torch::kInt, device);
    call.cu_k = IndexTensorOn(plan.cu_seqlens_k, torch::kInt, device);
    std::vector<int32_t> sequence, position;
    for (size_t b = 0; b + 1 < plan.cu_seqlens_q.size(); ++b) {
      for (int32_t t = 0; t < plan.cu_seqlens_q[b + 1] - plan.cu_seqlens_q[b]; ++t) {
        sequence.push_back(static_cast<int32_t>(b));
        position.push_back(t);
      }
    }
    call.row_sequence = IndexTensorOn(sequence, torch::kLong, device);
    call.row_position = IndexTensorOn(position, torch::kLong, device);
    call.plan = std::move(plan);
    calls.push_back(std::move(call));
  }
  return calls;
}

CallsForward RunCallsForward(const VarlenCallKernel& kernel, const std::vector<PlannedCall>& calls,
                             const torch::Tensor& q, const torch::Tensor& k,
                             const torch::Tensor& v, double scale) {
  CallsForward f;
  for (const PlannedCall& call : calls) {
    f.calls.push_back(kernel.Forward(call, SelectRows(q, call.query_index),
                                     SelectRows(k, call.key_index), SelectRows(v, call.key_index),
                                     scale));
  }
  if (OneWholeCall(calls)) {
    f.out = f.calls[0].out;
    return f;
  }
  f.out = torch::empty_like(q);
  for (size_t c = 0; c < calls.size(); ++c) PlaceRows(f.out, calls[c].query_index, f.calls[c].out);
  return f;
}

torch::Tensor CallsLse(const VarlenCallKernel& kernel, const std::vector<PlannedCall>& calls,
                       const CallsForward& forward, int64_t heads) {
  torch::Tensor lse = torch::empty({forward.out.size(0), heads},
                                   forward.out.options().dtype(torch::kFloat));
  for (size_t c = 0; c < calls.size(); ++c) {
    PlaceRows(lse, calls[c].query_index, kernel.LseRows(calls[c], forward.calls[c], heads));
  }
  return lse;
}

std::vector<torch::Tensor> RunCallsBackward(const VarlenCallKernel& kernel,
                                            const std::vector<PlannedCall>& calls,
                                            const std::vector<CallState>& states,
                                            const torch::Tensor& dout, const torch::Tensor& q,
                                            const torch::Tensor& k, const torch::Tensor& v,
                                            double scale) {
  if (OneWholeCall(calls)) return kernel.Backward(calls[0], states[0], dout, q, k, v, scale);
  torch::Tensor dq = torch::zeros_like(q);
  // Keys that two calls see get two partial gradients: summed in float32 at least.
  const torch::ScalarType sum_dtype = torch::promote_types(k.scalar_type(), torch::kFloat);
  torch::Tensor dk = torch::zeros(k.sizes(), k.options().dtype(sum_dtype));
  torch::Tensor dv = torch::zeros(v.sizes(), v.options().dtype(sum_dtype));
  for (size_t c = 0; c < calls.size(); ++c) {
    const PlannedCall& call = calls[c];
    std::vector<torch::Tensor> g = kernel.Backward(
        call, states[c], SelectRows(dout, call.query_index), SelectRows(q, call.query_index),
        SelectRows(k, call.key_index), SelectRows(v, call.key_index), scale);
    PlaceRows(dq, call.query_index, g[0]);
    AddRows(dk, call.key_index, g[1]);
    AddRows(dv, call.key_index, g[2]);
  }
  return {dq, dk.to(q.scalar_type()), dv.to(q.scalar_type())};
}

}  // namespace roboloop::kernels
