#include "train/packing.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace roboloop::train {
namespace {

absl::Status CheckSample(int32_t sample, int32_t prefix, int32_t suffix, int32_t history,
                         int32_t token_budget) {
  if (prefix < 0 || prefix > history) {
    return absl::InvalidArgumentError(absl::StrCat("packing: sample ", sample, " has prefix ",
                                                   prefix, ", outside [0, history = ", history,
                                                   "]"));
  }
  const int64_t length = static_cast<int64_t>(prefix) + suffix;
  if (length == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("packing: sample ", sample, " has no tokens (prefix 0, suffix 0)"));
  }
  if (length > token_budget) {
    return absl::InvalidArgumentError(absl::StrCat(
        "packing: token_budget ", token_budget, " is smaller than sample ", sample,
        "'s length ", length, " (prefix ", prefix, " + suffix ", suffix, ")"));
  }
  return absl::OkStatus();
}

Pack NewPack() {
  Pack pack;
  pack.cu_seqlens.push_back(0);
  return pack;
}

}  // namespace

absl::StatusOr<PackPlan> PlanPacks(absl::Span<const int32_t> prefix_lengths, int32_t suffix,
                                   int32_t token_budget, std::optional<int32_t> history) {
  if (suffix < 0) {
    return absl::InvalidArgumentError(absl::StrCat("packing: suffix ", suffix, " is negative"));
  }
  const int32_t slots = history.has_value()
                            ? *history
                            : (prefix_lengths.empty() ? 0 : *std::max_element(
                                                                prefix_lengths.begin(),
                                                                prefix_lengths.end()));
  PackPlan plan;
  plan.padded_tokens = static_cast<int64_t>(prefix_lengths.size()) * (slots + suffix);
  Pack pack = NewPack();
  for (size_t i = 0; i < prefix_lengths.size(); ++i) {
    const int32_t sample = static_cast<int32_t>(i);
    const int32_t prefix = prefix_lengths[i];
    ROBOLOOP_RETURN_IF_ERROR(CheckSample(sample, prefix, suffix, slots, token_budget));
    const int32_t length = prefix + suffix;
    if (pack.tokens + static_cast<int64_t>(length) > token_budget) {
      plan.packs.push_back(std::move(pack));
      pack = NewPack();
    }
    pack.samples.push_back(sample);
    pack.prefix_lengths.push_back(prefix);
    pack.tokens += length;
    pack.cu_seqlens.push_back(pack.tokens);
    plan.real_tokens += length;
  }
  if (!pack.samples.empty()) plan.packs.push_back(std::move(pack));
  return plan;
}

std::vector<int64_t> PackedTokenIndex(const Pack& pack, int32_t history, int32_t suffix) {
  std::vector<int64_t> index;
  index.reserve(static_cast<size_t>(pack.tokens));
  const int64_t row = static_cast<int64_t>(history) + suffix;
  for (size_t k = 0; k < pack.samples.size(); ++k) {
    const int32_t prefix = pack.prefix_lengths[k];
    ROBOLOOP_CHECK_MSG(prefix <= history, "sample ", pack.samples[k], " has prefix ", prefix,
                       " > history ", history);
    const int64_t base = pack.samples[k] * row;
    for (int32_t i = 0; i < prefix; ++i) index.push_back(base + history - prefix + i);
    for (int32_t c = 0; c < suffix; ++c) index.push_back(base + history + c);
  }
  return index;
}

}  // namespace roboloop::train
