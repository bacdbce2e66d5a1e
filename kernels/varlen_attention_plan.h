// How a mask becomes calls of plain varlen attention kernels (issue 22, req 1): LibTorch's
// FlashAttention and memory-efficient kernels take only "every key" or "causal, aligned
// bottom-right" per call, so the prefix masks are split by query rows. Every query row lands in
// exactly one call, which sees exactly the keys the mask lets it see; the calls' outputs then
// need no merging, only placing. Torch-free, so the decomposition is tested on every machine.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/attention_core.h"

namespace roboloop::kernels {

// Packed tokens a call reads: all of them in order, or the listed ones.
struct TokenSelection {
  bool all = true;              // every packed token, in order
  std::vector<int32_t> tokens;  // otherwise these packed token indices, sequence by sequence
};

// One varlen call: per sequence b, queries cu_seqlens_q[b]..cu_seqlens_q[b+1] of the selected
// query tokens attend to keys cu_seqlens_k[b]..cu_seqlens_k[b+1] of the selected key tokens;
// with `causal`, query t of n_q sees key s of n_k when s <= t + n_k - n_q (bottom-right).
struct VarlenCall {
  TokenSelection queries;
  TokenSelection keys;
  std::vector<int32_t> cu_seqlens_q;  // batch + 1 offsets into the selected queries
  std::vector<int32_t> cu_seqlens_k;  // batch + 1 offsets into the selected keys
  int32_t max_seqlen_q = 0;           // longest sequence of queries
  int32_t max_seqlen_k = 0;           // longest sequence of keys
  bool causal = false;
  // Selected query tokens in all.
  int64_t query_count() const { return cu_seqlens_q.back(); }
};

// The calls that compute `mask` over the packed batch: bidirectional and causal are one call
// over every token; prefix-LM is a bidirectional call of the prefixes plus a causal one of the
// suffix queries over whole sequences; the block mask is the same with a bidirectional second
// call. Calls without queries are left out. cu_seqlens: batch + 1 valid offsets from 0;
// prefix_lengths: batch entries in [0, length] when UsesPrefix(mask), else unread (may be null).
std::vector<VarlenCall> PlanVarlenCalls(MaskKind mask, const int32_t* cu_seqlens, int64_t batch,
                                        const int32_t* prefix_lengths);

}  // namespace roboloop::kernels
