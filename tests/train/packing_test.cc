// The packing planner and the padded -> packed token index.
#include "train/packing.h"

#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace roboloop::train {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(PackingTest, PacksFirstFitInSampleOrder) {
  // Lengths 5, 3, 4, 5 with budget 8: {0, 1} fill 8, then 4 + 5 > 8 splits 2 and 3.
  const std::vector<int32_t> prefixes = {3, 1, 2, 3};
  auto plan = PlanPacks(prefixes, 2, 8);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->packs.size(), 3u);
  EXPECT_THAT(plan->packs[0].samples, ElementsAre(0, 1));
  EXPECT_THAT(plan->packs[0].cu_seqlens, ElementsAre(0, 5, 8));
  EXPECT_THAT(plan->packs[0].prefix_lengths, ElementsAre(3, 1));
  EXPECT_EQ(plan->packs[0].tokens, 8);
  EXPECT_THAT(plan->packs[1].samples, ElementsAre(2));
  EXPECT_THAT(plan->packs[1].cu_seqlens, ElementsAre(0, 4));
  EXPECT_THAT(plan->packs[2].samples, ElementsAre(3));
  EXPECT_EQ(plan->real_tokens, 17);
  EXPECT_EQ(plan->padded_tokens, 4 * (3 + 2));
  auto with_history = PlanPacks(prefixes, 2, 8, 4);
  ASSERT_TRUE(with_history.ok());
  EXPECT_EQ(with_history->padded_tokens, 4 * (4 + 2));
}

TEST(PackingTest, RandomPlansKeepTheirInvariants) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    const int32_t history = 1 + static_cast<int32_t>(rng() % 8);
    const int32_t suffix = static_cast<int32_t>(rng() % 5);
    const int32_t budget = history + suffix + static_cast<int32_t>(rng() % 40);
    std::vector<int32_t> prefixes(1 + rng() % 30);
    for (int32_t& p : prefixes) p = 1 + static_cast<int32_t>(rng() % history);
    auto plan = PlanPacks(prefixes, suffix, budget, history);
    ASSERT_TRUE(plan.ok()) << plan.status();
    int32_t next_sample = 0;
    int64_t real = 0;
    for (size_t k = 0; k < plan->packs.size(); ++k) {
      const Pack& pack = plan->packs[k];
      ASSERT_FALSE(pack.samples.empty());
      EXPECT_LE(pack.tokens, budget);
      ASSERT_EQ(pack.cu_seqlens.size(), pack.samples.size() + 1);
      EXPECT_EQ(pack.cu_seqlens.front(), 0);
      EXPECT_EQ(pack.cu_seqlens.back(), pack.tokens);
      for (size_t i = 0; i < pack.samples.size(); ++i) {
        EXPECT_EQ(pack.samples[i], next_sample++);
        EXPECT_EQ(pack.prefix_lengths[i], prefixes[pack.samples[i]]);
        EXPECT_EQ(pack.cu_seqlens[i + 1] - pack.cu_seqlens[i], pack.prefix_lengths[i] + suffix);
      }
      real += pack.tokens;
      // A new pack opens only when the next sample did not fit.
      if (k + 1 < plan->packs.size()) {
        EXPECT_GT(pack.tokens + prefixes[next_sample] + suffix, budget);
      }
    }
    EXPECT_EQ(next_sample, static_cast<int32_t>(prefixes.size()));
    EXPECT_EQ(plan->real_tokens, real);
    EXPECT_EQ(plan->padded_tokens, static_cast<int64_t>(prefixes.size()) * (history + suffix));
  }
}

TEST(PackingTest, RejectsBadInput) {
  const std::vector<int32_t> prefixes = {2, 6};
  EXPECT_THAT(PlanPacks(prefixes, 3, 8).status().message(),
              HasSubstr("token_budget 8 is smaller than sample 1's length 9"));
  EXPECT_THAT(PlanPacks(prefixes, -1, 8).status().message(), HasSubstr("suffix -1"));
  EXPECT_THAT(PlanPacks(prefixes, 1, 20, 4).status().message(),
              HasSubstr("sample 1 has prefix 6, outside [0, history = 4]"));
  const std::vector<int32_t> empty_sample = {0};
  EXPECT_THAT(PlanPacks(empty_sample, 0, 8).status().message(), HasSubstr("has no tokens"));
  auto none = PlanPacks({}, 2, 8);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->packs.empty());
}

TEST(PackingTest, TokenIndexTakesTheLastHistorySlotsThenTheSuffix) {
  const std::vector<int32_t> prefixes = {3, 1};
  auto plan = PlanPacks(prefixes, 2, 100, 3);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->packs.size(), 1u);
  // Padded rows of 3 + 2 slots: sample 0 at 0..4, sample 1 at 5..9 (obs left-padded).
  EXPECT_THAT(PackedTokenIndex(plan->packs[0], 3, 2), ElementsAre(0, 1, 2, 3, 4, 7, 8, 9));
}

TEST(PackingTest, GatherByTokenIndexKeepsExactlyTheRealTokens) {
  const int32_t history = 4;
  const int32_t suffix = 3;
  const std::vector<int32_t> prefixes = {4, 1, 2, 4, 3};
  // Padded layout: value = 100 * sample + slot, negative where the slot is left padding.
  std::vector<int64_t> padded;
  for (size_t s = 0; s < prefixes.size(); ++s) {
    for (int32_t slot = 0; slot < history + suffix; ++slot) {
      const bool padding = slot < history - prefixes[s];
      padded.push_back((padding ? -1 : 1) * (100 * static_cast<int64_t>(s) + slot));
    }
  }
  auto plan = PlanPacks(prefixes, suffix, 12, history);
  ASSERT_TRUE(plan.ok());
  int64_t gathered = 0;
  for (const Pack& pack : plan->packs) {
    const std::vector<int64_t> index = PackedTokenIndex(pack, history, suffix);
    ASSERT_EQ(static_cast<int32_t>(index.size()), pack.tokens);
    for (size_t i = 0; i < pack.samples.size(); ++i) {
      const int32_t s = pack.samples[i];
      int32_t slot = history - pack.prefix_lengths[i];
      for (int32_t token = pack.cu_seqlens[i]; token < pack.cu_seqlens[i + 1]; ++token) {
        EXPECT_EQ(padded[index[token]], 100 * s + slot++);
        ++gathered;
      }
      EXPECT_EQ(slot, history + suffix);
    }
  }
  EXPECT_EQ(gathered, plan->real_tokens);
}

}  // namespace
}  // namespace roboloop::train
