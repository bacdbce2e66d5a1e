// Evaluation metrics (issue 7, req 2; definitions in eval/README.md): Wilson score intervals,
// seeded percentile bootstrap intervals, episode length statistics, end-reason counts, and
// the paired comparison of two evaluations (McNemar's exact test, paired sign-flip test and
// paired bootstrap).
// All functions are pure and thread-safe; the same inputs and seed give the same bits.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "roboloop/v1/eval.pb.h"

namespace roboloop::eval {

// Per-episode results as an Evaluation holds them.
using Episodes = google::protobuf::RepeatedPtrField<v1::EpisodeResult>;

// The standard normal quantile of 0.975 (two-sided 95 %).
inline constexpr double kZ95 = 1.959963984540054;

// Wilson score interval of `successes` out of `trials` at normal quantile `z`, clamped to
// [0, 1]; the low bound of 0 successes is exactly 0 and the high bound of `trials` successes
// exactly 1. InvalidArgument unless 0 <= successes <= trials and trials >= 1.
absl::StatusOr<v1::Interval> WilsonInterval(int64_t successes, int64_t trials, double z = kZ95);

// Options of the percentile bootstrap.
struct BootstrapOptions {
  int resamples = 10000;        // bootstrap resamples (>= 1)
  uint64_t seed = 0x5eed;       // seed of the resampling RNG
  double confidence = 0.95;     // two-sided interval level, in (0, 1)
};

// A uniform draw in [0, bound) from `engine` by rejection (unbiased, the same on every
// standard library, unlike std::uniform_int_distribution). `bound` >= 1.
uint64_t BoundedDraw(uint64_t bound, std::mt19937_64& engine);

// Mean of `values` with a percentile bootstrap interval (resampling with replacement,
// std::mt19937_64 seeded with options.seed), widened to contain the mean where the percentiles
// miss it. InvalidArgument for no values or bad options.
absl::StatusOr<v1::MeanEstimate> BootstrapMean(absl::Span<const double> values,
                                               const BootstrapOptions& options);

// Mean, min, max and median (mean of the middle two for an even count) of `lengths`.
// InvalidArgument when empty.
absl::StatusOr<v1::LengthStats> ComputeLengthStats(absl::Span<const int32_t> lengths);

// Success (Wilson), return (bootstrap), length and end-reason aggregates of `episodes`.
// InvalidArgument when empty.
absl::StatusOr<v1::Aggregates> Aggregate(const Episodes& episodes,
                                         const BootstrapOptions& options = {});

// Exact two-sided McNemar p for discordant counts b and c: min(1, 2 P(X <= min(b, c))) with
// X ~ Binomial(b + c, 1/2); 1 when b + c = 0. InvalidArgument for negative counts.
absl::StatusOr<double> McNemarExactP(int64_t b, int64_t c);

// Largest number of pairs whose 2^n sign assignments SignFlipTest enumerates exactly.
inline constexpr int kMaxExactSignFlipPairs = 20;

// The smallest significance level a comparison takes: at it the Monte-Carlo test already needs
// 10 / kMinAlpha resamples, and a smaller level would make the work unbounded.
inline constexpr double kMinAlpha = 1e-4;

// OK when `alpha` is a significance level a comparison takes, in [kMinAlpha, 1); otherwise
// InvalidArgument "alpha must be in [0.0001, 1), got ..." (NaN and 0 included).
absl::Status CheckAlpha(double alpha);

// Fewest resamples a paired comparison at `alpha` accepts: max(1000, ceil(10 / alpha)), so that
// the Monte-Carlo p floor 1 / (R + 1) lies well below alpha and each bootstrap tail holds at least
// 5 resample means. `alpha` as CheckAlpha takes it.
int MinCompareResamples(double alpha);

// A paired sign-flip (permutation) test of "mean difference 0".
struct SignFlipResult {
  double p = 1.0;        // two-sided p-value
  bool exact = false;    // all 2^n sign assignments were enumerated
  int64_t assignments = 0;  // sign assignments counted (2^n, or the Monte-Carlo draws)
};

// Two-sided sign-flip test of `differences` (statistic |sum of differences|; rule in
// eval/README.md): exact over all 2^n sign assignments when n <= kMaxExactSignFlipPairs, else
// `resamples` random assignments from std::mt19937_64(seed) with p = (k + 1) / (resamples + 1).
// InvalidArgument for no differences or resamples < 1.
absl::StatusOr<SignFlipResult> SignFlipTest(absl::Span<const double> differences, int resamples,
                                            uint64_t seed);

// Options of a paired comparison.
struct CompareOptions {
  double alpha = 0.05;          // significance level, as CheckAlpha takes it
  BootstrapOptions bootstrap;   // the return-difference bootstrap (confidence = 1 - alpha) and
                                // the Monte-Carlo sign-flip test; resamples >= MinCompareResamples
};

// The default options at `alpha`, with the resamples raised to MinCompareResamples(alpha) when
// CheckAlpha takes alpha and it needs more (ComparePaired refuses any other alpha).
CompareOptions CompareOptionsAt(double alpha);

// Compares `candidate` with `baseline` episode by episode, matched by (seed, episode index),
// and decides the verdict (rule in eval/README.md). Fills the counts, p-values, return
// difference, alpha, verdict and reason; ids and protocol hash are the caller's.
// InvalidArgument when the two episode sets differ (names the first unmatched episode),
// hold a duplicate, or are empty, when CheckAlpha refuses alpha, or when the resamples are
// fewer than MinCompareResamples(alpha).
absl::StatusOr<v1::Comparison> ComparePaired(const Episodes& candidate,
                                             const Episodes& baseline,
                                             const CompareOptions& options = {});

// "better", "worse", "no significant difference" (or "unspecified").
const char* VerdictName(v1::ComparisonVerdict verdict);

}  // namespace roboloop::eval
