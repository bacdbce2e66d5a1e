// Evaluation metrics (issue 7, req 2; definitions in eval/README.md): Wilson score intervals,
// seeded percentile bootstrap intervals, episode length statistics, end-reason counts, and
// the paired comparison of two evaluations (McNemar's exact test + paired bootstrap).
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
// [0, 1]. InvalidArgument unless 0 <= successes <= trials and trials >= 1.
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
// std::mt19937_64 seeded with options.seed). InvalidArgument for no values or bad options.
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

// Options of a paired comparison.
struct CompareOptions {
  double alpha = 0.05;          // significance level, in (0, 1)
  BootstrapOptions bootstrap;   // the return-difference bootstrap (confidence = 1 - alpha)
};

// Compares `candidate` with `baseline` episode by episode, matched by (seed, episode index),
// and decides the verdict (rule in eval/README.md). Fills the counts, p-values, return
// difference, alpha, verdict and reason; ids and protocol hash are the caller's.
// InvalidArgument when the two episode sets differ (names the first unmatched episode),
// hold a duplicate, or are empty.
absl::StatusOr<v1::Comparison> ComparePaired(const Episodes& candidate,
                                             const Episodes& baseline,
                                             const CompareOptions& options = {});

// "better", "worse", "no significant difference" (or "unspecified").
const char* VerdictName(v1::ComparisonVerdict verdict);

}  // namespace roboloop::eval
