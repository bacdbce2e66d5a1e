// The masks' decomposition into plain varlen calls (issue 22, req 1), torch-free: over random
// packed batches and every mask, each query row is answered by exactly one call, and the keys
// that call shows it are exactly the ones the mask lets it see.
#include "kernels/varlen_attention_plan.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

namespace roboloop::kernels {
namespace {

// Whether query i of a sequence sees key j (written out apart from the planner).
bool Visible(MaskKind mask, int32_t prefix, int32_t i, int32_t j) {
  switch (mask) {
    case MaskKind::kBidirectional: return true;
    case MaskKind::kCausal: return j <= i;
    case MaskKind::kPrefixLm: return j < prefix || j <= i;
    case MaskKind::kPrefixBlock: return j < prefix || i >= prefix;
  }
  return false;
}

int32_t TokenAt(const TokenSelection& selection, int32_t index) {
  return selection.all ? index : selection.tokens.at(index);
}

struct Batch {
  std::vector<int32_t> cu_seqlens = {0};
  std::vector<int32_t> prefixes;
  int32_t SequenceOf(int32_t token) const {
    int32_t b = 0;
    while (cu_seqlens[b + 1] <= token) ++b;
    return b;
  }
};

Batch RandomBatch(std::mt19937* rng) {
  Batch batch;
  const int sequences = std::uniform_int_distribution<int>(1, 6)(*rng);
  for (int b = 0; b < sequences; ++b) {
    const int32_t length = std::uniform_int_distribution<int32_t>(0, 20)(*rng);
    batch.cu_seqlens.push_back(batch.cu_seqlens.back() + length);
    batch.prefixes.push_back(std::uniform_int_distribution<int32_t>(0, length)(*rng));
  }
  return batch;
}

// The visibility that `calls` give, as a set of (query token, key token), checking that every
// query token is answered once and its keys lie in its own sequence.
std::set<std::pair<int32_t, int32_t>> PlannedPairs(const Batch& batch,
                                                   const std::vector<VarlenCall>& calls) {
  std::set<std::pair<int32_t, int32_t>> pairs;
  std::vector<int> answered(batch.cu_seqlens.back(), 0);
  for (const VarlenCall& call : calls) {
    EXPECT_GT(call.query_count(), 0);
    const int64_t sequences = static_cast<int64_t>(batch.prefixes.size());
    EXPECT_EQ(call.cu_seqlens_q.size(), sequences + 1);
    EXPECT_EQ(call.cu_seqlens_k.size(), sequences + 1);
    for (int64_t b = 0; b < sequences; ++b) {
      const int32_t n_q = call.cu_seqlens_q[b + 1] - call.cu_seqlens_q[b];
      const int32_t n_k = call.cu_seqlens_k[b + 1] - call.cu_seqlens_k[b];
      EXPECT_LE(n_q, call.max_seqlen_q);
      EXPECT_LE(n_k, call.max_seqlen_k);
      for (int32_t t = 0; t < n_q; ++t) {
        const int32_t query = TokenAt(call.queries, call.cu_seqlens_q[b] + t);
        EXPECT_EQ(batch.SequenceOf(query), b);
        ++answered[query];
        for (int32_t s = 0; s < n_k; ++s) {
          const int32_t key = TokenAt(call.keys, call.cu_seqlens_k[b] + s);
          EXPECT_EQ(batch.SequenceOf(key), b);
          if (!call.causal || s <= t + n_k - n_q) pairs.insert({query, key});
        }
      }
    }
  }
  for (size_t token = 0; token < answered.size(); ++token) {
    EXPECT_EQ(answered[token], 1) << "query token " << token;
  }
  return pairs;
}

std::set<std::pair<int32_t, int32_t>> MaskPairs(const Batch& batch, MaskKind mask) {
  std::set<std::pair<int32_t, int32_t>> pairs;
  for (size_t b = 0; b < batch.prefixes.size(); ++b) {
    const int32_t start = batch.cu_seqlens[b], length = batch.cu_seqlens[b + 1] - start;
    for (int32_t i = 0; i < length; ++i) {
      for (int32_t j = 0; j < length; ++j) {
        if (Visible(mask, batch.prefixes[b], i, j)) pairs.insert({start + i, start + j});
      }
    }
  }
  return pairs;
}

TEST(VarlenAttentionPlanTest, EveryMaskIsExactlyItsCalls) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    const Batch batch = RandomBatch(&rng);
    for (MaskKind mask : {MaskKind::kBidirectional, MaskKind::kCausal, MaskKind::kPrefixLm,
                          MaskKind::kPrefixBlock}) {
      const std::vector<VarlenCall> calls =
          PlanVarlenCalls(mask, batch.cu_seqlens.data(),
                          static_cast<int64_t>(batch.prefixes.size()), batch.prefixes.data());
      ASSERT_EQ(PlannedPairs(batch, calls), MaskPairs(batch, mask))
          << "trial " << trial << ", mask " << static_cast<int>(mask);
    }
  }
}

TEST(VarlenAttentionPlanTest, PrefixMasksAreTwoCallsAndOthersOne) {
  const std::vector<int32_t> cu = {0, 5, 12};
  const std::vector<int32_t> prefixes = {2, 3};
  EXPECT_EQ(PlanVarlenCalls(MaskKind::kBidirectional, cu.data(), 2, nullptr).size(), 1u);
  const std::vector<VarlenCall> causal = PlanVarlenCalls(MaskKind::kCausal, cu.data(), 2, nullptr);
  ASSERT_EQ(causal.size(), 1u);
  EXPECT_TRUE(causal[0].causal && causal[0].queries.all && causal[0].keys.all);
  EXPECT_EQ(causal[0].max_seqlen_q, 7);
  const std::vector<VarlenCall> block =
      PlanVarlenCalls(MaskKind::kPrefixBlock, cu.data(), 2, prefixes.data());
  ASSERT_EQ(block.size(), 2u);
  EXPECT_EQ(block[0].queries.tokens, (std::vector<int32_t>{0, 1, 5, 6, 7}));
  EXPECT_EQ(block[1].queries.tokens, (std::vector<int32_t>{2, 3, 4, 8, 9, 10, 11}));
  EXPECT_TRUE(block[1].keys.all);
  EXPECT_FALSE(block[1].causal);
  const std::vector<VarlenCall> lm = PlanVarlenCalls(MaskKind::kPrefixLm, cu.data(), 2, prefixes.data());
  ASSERT_EQ(lm.size(), 2u);
  EXPECT_TRUE(lm[1].causal);
}

TEST(VarlenAttentionPlanTest, CallsWithoutQueriesAreLeftOut) {
  const std::vector<int32_t> cu = {0, 4, 6};
  const std::vector<int32_t> no_prefix = {0, 0}, all_prefix = {4, 2};
  const std::vector<VarlenCall> suffix_only =
      PlanVarlenCalls(MaskKind::kPrefixLm, cu.data(), 2, no_prefix.data());
  ASSERT_EQ(suffix_only.size(), 1u);
  EXPECT_FALSE(suffix_only[0].queries.all);
  EXPECT_EQ(suffix_only[0].query_count(), 6);
  const std::vector<VarlenCall> prefix_only =
      PlanVarlenCalls(MaskKind::kPrefixBlock, cu.data(), 2, all_prefix.data());
  ASSERT_EQ(prefix_only.size(), 1u);
  EXPECT_EQ(prefix_only[0].keys.tokens.size(), 6u);
}

}  // namespace
}  // namespace roboloop::kernels
