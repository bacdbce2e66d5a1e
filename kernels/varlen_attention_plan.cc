#include "kernels/varlen_attention_plan.h"

#include <algorithm>

namespace roboloop::kernels {
namespace {

// Appends one sequence's `count` selected rows (ending the sequence's segment).
void CloseSequence(std::vector<int32_t>* cu, int32_t* longest, int32_t count) {
  cu->push_back(cu->back() + count);
  *longest = std::max(*longest, count);
}

VarlenCall WholeSequences(const int32_t* cu_seqlens, int64_t batch, bool causal) {
  VarlenCall call;
  call.causal = causal;
  call.cu_seqlens_q.push_back(0);
  for (int64_t b = 0; b < batch; ++b) {
    CloseSequence(&call.cu_seqlens_q, &call.max_seqlen_q, cu_seqlens[b + 1] - cu_seqlens[b]);
  }
  call.cu_seqlens_k = call.cu_seqlens_q;
  call.max_seqlen_k = call.max_seqlen_q;
  return call;
}

// The prefixes attending among themselves.
VarlenCall Prefixes(const int32_t* cu_seqlens, int64_t batch, const int32_t* prefix_lengths) {
  VarlenCall call;
  call.queries.all = false;
  call.cu_seqlens_q.push_back(0);
  for (int64_t b = 0; b < batch; ++b) {
    for (int32_t t = 0; t < prefix_lengths[b]; ++t) call.queries.tokens.push_back(cu_seqlens[b] + t);
    CloseSequence(&call.cu_seqlens_q, &call.max_seqlen_q, prefix_lengths[b]);
  }
  call.keys = call.queries;
  call.cu_seqlens_k = call.cu_seqlens_q;
  call.max_seqlen_k = call.max_seqlen_q;
  return call;
}

// The suffix queries over their whole sequences.
VarlenCall Suffixes(const int32_t* cu_seqlens, int64_t batch, const int32_t* prefix_lengths,
                    bool causal) {
  VarlenCall call = WholeSequences(cu_seqlens, batch, causal);
  call.queries.all = false;
  call.cu_seqlens_q = {0};
  call.max_seqlen_q = 0;
  for (int64_t b = 0; b < batch; ++b) {
    for (int32_t t = cu_seqlens[b] + prefix_lengths[b]; t < cu_seqlens[b + 1]; ++t) {
      call.queries.tokens.push_back(t);
    }
    CloseSequence(&call.cu_seqlens_q, &call.max_seqlen_q,
                  cu_seqlens[b + 1] - cu_seqlens[b] - prefix_lengths[b]);
  }
  return call;
}

}  // namespace

std::vector<VarlenCall> PlanVarlenCalls(MaskKind mask, const int32_t* cu_seqlens, int64_t batch,
                                        const int32_t* prefix_lengths) {
  std::vector<VarlenCall> calls;
  if (!UsesPrefix(mask)) {
    calls.push_back(WholeSequences(cu_seqlens, batch, mask == MaskKind::kCausal));
  } else {
    calls.push_back(Prefixes(cu_seqlens, batch, prefix_lengths));
    calls.push_back(Suffixes(cu_seqlens, batch, prefix_lengths, mask == MaskKind::kPrefixLm));
  }
  calls.erase(std::remove_if(calls.begin(), calls.end(),
                             [](const VarlenCall& call) { return call.query_count() == 0; }),
              calls.end());
  return calls;
}

}  // namespace roboloop::kernels
