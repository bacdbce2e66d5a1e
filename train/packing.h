// Packing of variable-length samples into token-budgeted sequences for the packed
// (varlen) attention kernels: sample i is prefix_i obs tokens followed by `suffix` action
// tokens. Torch-free; pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace roboloop::train {

// Consecutive samples packed into one sequence.
struct Pack {
  std::vector<int32_t> samples;         // sample indices (ascending, consecutive)
  std::vector<int32_t> cu_seqlens;      // samples.size() + 1 offsets: 0, L_0, L_0 + L_1, .., tokens
  std::vector<int32_t> prefix_lengths;  // prefix (obs tokens) of each packed sample
  int32_t tokens = 0;                   // sum of the packed samples' lengths, <= token_budget
};

// All packs of a batch, in sample order.
struct PackPlan {
  std::vector<Pack> packs;    // every sample in exactly one pack
  int64_t real_tokens = 0;    // sum over samples of prefix_i + suffix
  int64_t padded_tokens = 0;  // batch * (history + suffix), the padded layout's tokens
};

// Plans packs in sample order, first fit: a sample joins the current pack when it fits in
// `token_budget`, else it opens a new pack. `history` is the padded layout's obs slots
// (default: the largest prefix). Errors: a prefix < 0 or > history, suffix < 0, a sample of
// no tokens, or token_budget smaller than a sample's length (naming both).
absl::StatusOr<PackPlan> PlanPacks(absl::Span<const int32_t> prefix_lengths, int32_t suffix,
                                   int32_t token_budget,
                                   std::optional<int32_t> history = std::nullopt);

// For each token of `pack` in packed order, its index in the padded layout
// [batch, history + suffix] flattened: sample s's real obs tokens are the last prefix_s of
// its `history` slots (obs is left-padded), then its `suffix` action tokens. Lets the torch
// side gather padded -> packed (and scatter back). Every prefix must be <= history (checked).
std::vector<int64_t> PackedTokenIndex(const Pack& pack, int32_t history, int32_t suffix);

}  // namespace roboloop::train
