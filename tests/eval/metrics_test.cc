#include "eval/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace roboloop::eval {
namespace {

using ::testing::HasSubstr;

v1::EpisodeResult Episode(int64_t index, bool success, double episode_return, int length = 100,
                          const std::string& end_reason = "truncated") {
  v1::EpisodeResult episode;
  episode.set_episode_index(index);
  episode.set_seed(1000 + static_cast<uint64_t>(index) * 7);
  episode.set_success(success);
  episode.set_episode_return(episode_return);
  episode.set_length(length);
  episode.set_end_reason(end_reason);
  return episode;
}

TEST(WilsonTest, KnownValueFor96Of100) {
  auto interval = WilsonInterval(96, 100);
  ASSERT_TRUE(interval.ok()) << interval.status();
  EXPECT_NEAR(interval->low(), 0.9016, 5e-5);
  EXPECT_NEAR(interval->high(), 0.9843, 5e-4);
}

TEST(WilsonTest, AllFailuresAndAllSuccesses) {
  auto none = WilsonInterval(0, 20);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->low(), 0.0);
  // Upper bound of 0/n is z^2 / (n + z^2).
  EXPECT_NEAR(none->high(), kZ95 * kZ95 / (20 + kZ95 * kZ95), 1e-12);
  auto all = WilsonInterval(20, 20);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->high(), 1.0);
  EXPECT_NEAR(all->low(), 20 / (20 + kZ95 * kZ95), 1e-12);
}

TEST(WilsonTest, RejectsImpossibleCounts) {
  EXPECT_FALSE(WilsonInterval(0, 0).ok());
  EXPECT_FALSE(WilsonInterval(5, 4).ok());
  EXPECT_FALSE(WilsonInterval(-1, 4).ok());
}

TEST(WilsonTest, ZeroAndFullSuccessesHitTheBoundsExactly) {
  // Rounding once left 1.7e-18 for 0/200, which ranked that row above other 0/n rows.
  for (int64_t trials : {1, 3, 7, 200, 3000, 12345}) {
    EXPECT_EQ(WilsonInterval(0, trials)->low(), 0.0) << "0/" << trials;
    EXPECT_EQ(WilsonInterval(trials, trials)->high(), 1.0) << trials << "/" << trials;
  }
}

TEST(McNemarTest, KnownExactPValue) {
  auto p = McNemarExactP(10, 2);
  ASSERT_TRUE(p.ok());
  EXPECT_NEAR(*p, 0.0386, 5e-5);
  auto symmetric = McNemarExactP(2, 10);
  ASSERT_TRUE(symmetric.ok());
  EXPECT_DOUBLE_EQ(*symmetric, *p);
}

TEST(McNemarTest, EdgeCases) {
  EXPECT_EQ(*McNemarExactP(0, 0), 1.0);
  EXPECT_EQ(*McNemarExactP(5, 5), 1.0);
  // 2 * 0.5^6 for (6, 0).
  EXPECT_NEAR(*McNemarExactP(6, 0), 2.0 / 64.0, 1e-15);
  // Large counts stay finite.
  auto large = McNemarExactP(600, 400);
  ASSERT_TRUE(large.ok());
  EXPECT_GT(*large, 0.0);
  EXPECT_LT(*large, 1e-9);
  EXPECT_FALSE(McNemarExactP(-1, 2).ok());
}

TEST(BoundedDrawTest, StaysInRangeAndCoversIt) {
  std::mt19937_64 engine(3);
  std::vector<int> counts(7, 0);
  for (int i = 0; i < 7000; ++i) {
    uint64_t x = BoundedDraw(7, engine);
    ASSERT_LT(x, 7u);
    counts[x] += 1;
  }
  for (int count : counts) EXPECT_GT(count, 800);
}

TEST(BootstrapTest, SameSeedSameBitsOtherSeedOtherInterval) {
  std::vector<double> values;
  for (int i = 0; i < 50; ++i) values.push_back((i * 37) % 11 + 0.25 * i);
  BootstrapOptions options;
  options.resamples = 2000;
  options.seed = 42;
  auto a = BootstrapMean(values, options);
  auto b = BootstrapMean(values, options);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->interval().low(), b->interval().low());
  EXPECT_EQ(a->interval().high(), b->interval().high());
  EXPECT_LT(a->interval().low(), a->mean());
  EXPECT_GT(a->interval().high(), a->mean());
  EXPECT_EQ(a->resamples(), 2000);
  EXPECT_EQ(a->seed(), 42u);
  options.seed = 43;
  auto c = BootstrapMean(values, options);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->interval().low(), c->interval().low());
}

TEST(BootstrapTest, ConstantValuesGiveAPointInterval) {
  std::vector<double> values(30, 2.5);
  auto estimate = BootstrapMean(values, {});
  ASSERT_TRUE(estimate.ok());
  EXPECT_EQ(estimate->mean(), 2.5);
  EXPECT_EQ(estimate->interval().low(), 2.5);
  EXPECT_EQ(estimate->interval().high(), 2.5);
  EXPECT_EQ(estimate->resamples(), 10000);
}

TEST(BootstrapTest, RejectsBadInput) {
  EXPECT_FALSE(BootstrapMean({}, {}).ok());
  BootstrapOptions options;
  options.resamples = 0;
  std::vector<double> values = {1.0};
  EXPECT_FALSE(BootstrapMean(values, options).ok());
}

TEST(BootstrapTest, IntervalContainsTheMeanEvenWithOneResample) {
  std::vector<double> values = {10.0, 20.0, 30.0, 0.0, 7.5};
  BootstrapOptions options;
  options.resamples = 1;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    options.seed = seed;
    auto estimate = BootstrapMean(values, options);
    ASSERT_TRUE(estimate.ok());
    EXPECT_LE(estimate->interval().low(), estimate->mean()) << "seed " << seed;
    EXPECT_GE(estimate->interval().high(), estimate->mean()) << "seed " << seed;
  }
}

// The exact sign-flip p of `differences` (any resamples and seed: enumeration ignores them).
double ExactSignFlipP(const std::vector<double>& differences) {
  auto result = SignFlipTest(differences, 1, 0);
  EXPECT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->exact);
  EXPECT_EQ(result->assignments, int64_t{1} << differences.size());
  return result->p;
}

TEST(SignFlipTest, HandComputedExactPValues) {
  // Only the all-plus and all-minus assignments reach |sum| = 4 (or 10): 2 of 2^4.
  EXPECT_EQ(ExactSignFlipP({1.0, 1.0, 1.0, 1.0}), 0.125);
  EXPECT_EQ(ExactSignFlipP({1.0, 2.0, 3.0, 4.0}), 0.125);
  // Sums of +-1 +-2 +-3 -+1 with |sum| >= 5: 7, 5, 5, -5, -5, -7, so 6 of 16.
  EXPECT_EQ(ExactSignFlipP({1.0, 2.0, 3.0, -1.0}), 0.375);
  EXPECT_EQ(ExactSignFlipP({2.0, 0.0, 0.0}), 1.0);
  EXPECT_EQ(ExactSignFlipP({0.0, 0.0}), 1.0);
  EXPECT_EQ(ExactSignFlipP({1.5, 1.5, 1.5, 1.5, 1.5, 1.5}), 2.0 / 64.0);
}

TEST(SignFlipTest, UnitDifferencesGiveTheExactSignTest) {
  // With |d| = 1 the statistic counts positives, so p is the two-sided binomial sign test.
  std::vector<double> differences(12, 1.0);
  for (int i = 0; i < 3; ++i) differences[i] = -1.0;
  EXPECT_NEAR(ExactSignFlipP(differences), *McNemarExactP(9, 3), 1e-15);
}

TEST(SignFlipTest, MonteCarloBeyondTheExactLimit) {
  std::vector<double> differences(30, 1.0);
  for (int i = 0; i < 10; ++i) differences[i] = -1.0;
  auto result = SignFlipTest(differences, 100000, 7);
  ASSERT_TRUE(result.ok());
  EXPECT_FALSE(result->exact);
  EXPECT_EQ(result->assignments, 100000);
  EXPECT_NEAR(result->p, *McNemarExactP(20, 10), 0.005);
  std::vector<double> all_positive(30, 1.0);
  EXPECT_EQ(SignFlipTest(all_positive, 1000, 7)->p, 1.0 / 1001.0);
  EXPECT_FALSE(SignFlipTest({}, 1000, 7).ok());
  EXPECT_FALSE(SignFlipTest(all_positive, 0, 7).ok());
}

TEST(LengthStatsTest, MeanMinMaxMedian) {
  std::vector<int32_t> lengths = {10, 40, 20, 30};
  auto stats = ComputeLengthStats(lengths);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->mean(), 25.0);
  EXPECT_EQ(stats->min(), 10);
  EXPECT_EQ(stats->max(), 40);
  EXPECT_EQ(stats->median(), 25.0);
  std::vector<int32_t> odd = {5, 1, 3};
  EXPECT_EQ(ComputeLengthStats(odd)->median(), 3.0);
}

TEST(AggregateTest, CountsSuccessesAndEndReasons) {
  Episodes episodes;
  *episodes.Add() = Episode(0, true, 1.0, 50, "terminated");
  *episodes.Add() = Episode(1, false, 3.0, 100, "truncated");
  *episodes.Add() = Episode(2, true, 5.0, 60, "terminated");
  auto aggregates = Aggregate(episodes);
  ASSERT_TRUE(aggregates.ok()) << aggregates.status();
  EXPECT_EQ(aggregates->success().successes(), 2);
  EXPECT_EQ(aggregates->success().trials(), 3);
  EXPECT_NEAR(aggregates->success().rate(), 2.0 / 3.0, 1e-15);
  EXPECT_EQ(aggregates->success().interval().low(), WilsonInterval(2, 3)->low());
  EXPECT_EQ(aggregates->episode_return().mean(), 3.0);
  EXPECT_EQ(aggregates->length().median(), 60.0);
  EXPECT_EQ(aggregates->end_reasons().at("terminated"), 2);
  EXPECT_EQ(aggregates->end_reasons().at("truncated"), 1);
}

// `n` episodes, the first `successes` successful, returns return_offset + (i % 5).
Episodes MakeRun(int n, int successes, double return_offset) {
  Episodes episodes;
  for (int i = 0; i < n; ++i) *episodes.Add() = Episode(i, i < successes, return_offset + (i % 5));
  return episodes;
}

TEST(ComparePairedTest, MoreCandidateOnlySuccessesIsBetter) {
  auto comparison = ComparePaired(MakeRun(40, 30, 0.0), MakeRun(40, 18, 0.0));
  ASSERT_TRUE(comparison.ok()) << comparison.status();
  EXPECT_EQ(comparison->pairs(), 40);
  EXPECT_EQ(comparison->candidate_only(), 12);
  EXPECT_EQ(comparison->baseline_only(), 0);
  EXPECT_EQ(comparison->both_succeeded(), 18);
  EXPECT_EQ(comparison->neither_succeeded(), 10);
  EXPECT_NEAR(comparison->mcnemar_p(), *McNemarExactP(12, 0), 1e-15);
  EXPECT_EQ(comparison->verdict(), v1::VERDICT_BETTER);
  EXPECT_THAT(comparison->reason(), HasSubstr("McNemar"));
  auto reversed = ComparePaired(MakeRun(40, 18, 0.0), MakeRun(40, 30, 0.0));
  EXPECT_EQ(reversed->verdict(), v1::VERDICT_WORSE);
}

TEST(ComparePairedTest, EqualSuccessButHigherReturnIsBetterByReturn) {
  auto comparison = ComparePaired(MakeRun(40, 20, 1.0), MakeRun(40, 20, 0.0));
  ASSERT_TRUE(comparison.ok());
  EXPECT_EQ(comparison->mcnemar_p(), 1.0);
  EXPECT_EQ(comparison->return_difference().mean(), 1.0);
  EXPECT_GT(comparison->return_difference().interval().low(), 0.0);
  EXPECT_LT(comparison->return_difference_p(), 0.05);
  EXPECT_EQ(comparison->verdict(), v1::VERDICT_BETTER);
  EXPECT_THAT(comparison->reason(), HasSubstr("return"));
}

TEST(ComparePairedTest, IdenticalRunsShowNoDifference) {
  auto comparison = ComparePaired(MakeRun(40, 20, 0.0), MakeRun(40, 20, 0.0));
  ASSERT_TRUE(comparison.ok());
  EXPECT_EQ(comparison->verdict(), v1::VERDICT_NO_SIGNIFICANT_DIFFERENCE);
  EXPECT_EQ(comparison->return_difference_p(), 1.0);
}

TEST(ComparePairedTest, MatchesByKeyNotByOrder) {
  Episodes shuffled = MakeRun(10, 5, 0.0);
  std::reverse(shuffled.pointer_begin(), shuffled.pointer_end());
  auto comparison = ComparePaired(shuffled, MakeRun(10, 5, 0.0));
  ASSERT_TRUE(comparison.ok());
  EXPECT_EQ(comparison->candidate_only(), 0);
  EXPECT_EQ(comparison->baseline_only(), 0);
  EXPECT_EQ(comparison->return_difference().mean(), 0.0);
}

TEST(ComparePairedTest, MismatchedEpisodeSetsAreAnError) {
  Episodes shorter = MakeRun(9, 5, 0.0);
  auto missing = ComparePaired(MakeRun(10, 5, 0.0), shorter);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.status().message(), HasSubstr("episode 9"));
  EXPECT_THAT(missing.status().message(), HasSubstr("missing from the baseline"));

  Episodes other_seed = MakeRun(10, 5, 0.0);
  other_seed[3].set_seed(99);
  EXPECT_FALSE(ComparePaired(MakeRun(10, 5, 0.0), other_seed).ok());

  Episodes duplicate = MakeRun(10, 5, 0.0);
  *duplicate.Add() = duplicate[0];
  auto twice = ComparePaired(duplicate, MakeRun(10, 5, 0.0));
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.status().message(), HasSubstr("twice"));
}

TEST(ComparePairedTest, FourPairsCannotBeBetterByReturn) {
  // QA: 4 paired episodes with a higher return each once gave p = 0.0002 and "better".
  auto comparison = ComparePaired(MakeRun(4, 0, 10.0), MakeRun(4, 0, 0.0));
  ASSERT_TRUE(comparison.ok()) << comparison.status();
  EXPECT_GE(comparison->return_difference_p(), 0.125);
  EXPECT_EQ(comparison->verdict(), v1::VERDICT_NO_SIGNIFICANT_DIFFERENCE);
  EXPECT_THAT(comparison->reason(), HasSubstr("exact sign-flip p = 0.125"));
  EXPECT_LE(comparison->return_difference().interval().low(), comparison->return_difference().mean());
  EXPECT_GE(comparison->return_difference().interval().high(), comparison->return_difference().mean());
}

TEST(ComparePairedTest, SixPairsAllHigherAreBetterAtTheExactP) {
  auto comparison = ComparePaired(MakeRun(6, 0, 10.0), MakeRun(6, 0, 0.0));
  ASSERT_TRUE(comparison.ok());
  EXPECT_EQ(comparison->return_difference_p(), 2.0 / 64.0);
  EXPECT_EQ(comparison->verdict(), v1::VERDICT_BETTER);
  auto reversed = ComparePaired(MakeRun(6, 0, 0.0), MakeRun(6, 0, 10.0));
  EXPECT_EQ(reversed->verdict(), v1::VERDICT_WORSE);
}

TEST(ComparePairedTest, AHigherReturnFromEpisodesCutShortByInvalidActionsIsNotBetter) {
  // QA: a policy emitting NaN ended every reacher episode at step 0 with return 0, above a working
  // policy's negative returns, and compare (so promote) called it better.
  Episodes broken;
  for (int i = 0; i < 12; ++i) *broken.Add() = Episode(i, false, 0.0, 0, "invalid_action");
  auto comparison = ComparePaired(broken, MakeRun(12, 0, -10.0));
  ASSERT_TRUE(comparison.ok()) << comparison.status();
  EXPECT_LT(comparison->return_difference_p(), 0.05);
  EXPECT_EQ(comparison->verdict(), v1::VERDICT_NO_SIGNIFICANT_DIFFERENCE);
  EXPECT_THAT(comparison->reason(), HasSubstr("12 of its episodes ended by an invalid action"));
  auto reversed = ComparePaired(MakeRun(12, 0, -10.0), broken);
  EXPECT_EQ(reversed->verdict(), v1::VERDICT_WORSE);
}

TEST(ComparePairedTest, RefusesTooFewResamplesForAlpha) {
  CompareOptions options;
  options.bootstrap.resamples = 999;
  auto few = ComparePaired(MakeRun(4, 2, 0.0), MakeRun(4, 2, 0.0), options);
  ASSERT_FALSE(few.ok());
  EXPECT_THAT(few.status().message(), HasSubstr("resamples must be >= 1000"));
  options.bootstrap.resamples = 10000;
  options.alpha = 0.001;
  EXPECT_TRUE(ComparePaired(MakeRun(4, 2, 0.0), MakeRun(4, 2, 0.0), options).ok());
  options.alpha = 0.0005;
  EXPECT_FALSE(ComparePaired(MakeRun(4, 2, 0.0), MakeRun(4, 2, 0.0), options).ok());
  EXPECT_EQ(MinCompareResamples(0.05), 1000);
  EXPECT_EQ(MinCompareResamples(0.0005), 20000);
}

TEST(ComparePairedTest, RejectsBadAlpha) {
  CompareOptions options;
  for (double alpha : {1.5, 1.0, 0.0, -1.0, std::nan("")}) {
    options.alpha = alpha;
    EXPECT_FALSE(ComparePaired(MakeRun(4, 2, 0.0), MakeRun(4, 2, 0.0), options).ok()) << alpha;
  }
}

}  // namespace
}  // namespace roboloop::eval
