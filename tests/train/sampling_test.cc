// The sampling contract's pure functions: the seed mix, the bounded draw, the epoch
// permutation and the rank slices of a global batch.
#include "train/sampling.h"

#include <algorithm>
#include <random>
#include <set>
#include <utility>

#include "gtest/gtest.h"

namespace roboloop::train {
namespace {

TEST(SamplingTest, Mix64IsSplitMix64) {
  // SplitMix64 with state 0 outputs Mix64(state += 0x9E3779B97F4A7C15); published first outputs.
  EXPECT_EQ(Mix64(0x9E3779B97F4A7C15ull), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(Mix64(2 * 0x9E3779B97F4A7C15ull), 0x6E789E6AA1B965F4ull);
}

TEST(SamplingTest, EpochSeedDependsOnSeedAndEpoch) {
  std::set<uint64_t> seeds;
  for (uint64_t seed = 0; seed < 4; ++seed)
    for (int64_t epoch = 0; epoch < 4; ++epoch) seeds.insert(EpochSeed(seed, epoch));
  EXPECT_EQ(seeds.size(), 16u);
  EXPECT_EQ(EpochSeed(7, 3), Mix64(7 + 0x9E3779B97F4A7C15ull * 4));
}

TEST(SamplingTest, BoundedDrawStaysInRangeAndCoversIt) {
  std::mt19937_64 rng(42);
  std::vector<int> counts(7, 0);
  for (int i = 0; i < 7000; ++i) {
    const uint64_t draw = BoundedDraw(rng, 7);
    ASSERT_LT(draw, 7u);
    ++counts[draw];
  }
  for (int count : counts) EXPECT_GT(count, 800);
  EXPECT_EQ(BoundedDraw(rng, 1), 0u);
}

TEST(SamplingTest, BoundedDrawRejectsTheBiasedTail) {
  // With bound 2^63 + 1, 2^64 mod bound = 2^63 - 1: raw draws below it are rejected.
  const uint64_t bound = (uint64_t{1} << 63) + 1;
  uint64_t seed = 0;
  while (std::mt19937_64(seed)() >= bound - 2) ++seed;  // a seed whose first draw is rejected
  std::mt19937_64 raw(seed);
  std::mt19937_64 rng(seed);
  uint64_t expected = raw();
  while (expected < bound - 2) expected = raw();
  EXPECT_EQ(BoundedDraw(rng, bound), expected % bound);
}

// The contract written out independently: Fisher–Yates from the top, mt19937_64 seeded with
// EpochSeed, draws bounded by rejection.
std::vector<int64_t> ReferencePermutation(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> p(n);
  for (int64_t i = 0; i < n; ++i) p[i] = i;
  std::mt19937_64 rng(Mix64(seed + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(epoch + 1)));
  for (int64_t i = n - 1; i > 0; --i) {
    const uint64_t bound = static_cast<uint64_t>(i) + 1;
    uint64_t draw;
    do {
      draw = rng();
    } while (draw < (~bound + 1) % bound);
    std::swap(p[i], p[draw % bound]);
  }
  return p;
}

TEST(SamplingTest, EpochPermutationFollowsTheContract) {
  for (int64_t n : {1, 2, 17, 1000}) {
    for (int64_t epoch : {0, 1, 5}) {
      const std::vector<int64_t> permutation = EpochPermutation(n, 99, epoch);
      EXPECT_EQ(permutation, ReferencePermutation(n, 99, epoch)) << n << " " << epoch;
      std::vector<int64_t> sorted = permutation;
      std::sort(sorted.begin(), sorted.end());
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(sorted[i], i);
    }
  }
}

TEST(SamplingTest, EpochsAndSeedsGiveDifferentPermutations) {
  EXPECT_NE(EpochPermutation(100, 1, 0), EpochPermutation(100, 1, 1));
  EXPECT_NE(EpochPermutation(100, 1, 0), EpochPermutation(100, 2, 0));
  EXPECT_EQ(EpochPermutation(100, 1, 3), EpochPermutation(100, 1, 3));
}

TEST(SamplingTest, SliceOfBatchShardsTheGlobalBatchByRank) {
  // 5 batches per epoch, batch 4 per rank, 3 ranks: G = 12.
  const BatchSlice first = SliceOfBatch(0, 5, 4, 0, 3);
  EXPECT_EQ(first.epoch, 0);
  EXPECT_EQ(first.begin, 0);
  EXPECT_EQ(first.size, 4);
  const BatchSlice slice = SliceOfBatch(7, 5, 4, 2, 3);
  EXPECT_EQ(slice.epoch, 1);
  EXPECT_EQ(slice.begin, 2 * 12 + 2 * 4);
  EXPECT_EQ(slice.size, 4);
}

}  // namespace
}  // namespace roboloop::train
