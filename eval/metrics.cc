#include "eval/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status.h"

namespace roboloop::eval {
namespace {

absl::Status CheckBootstrapOptions(const BootstrapOptions& options) {
  if (options.resamples < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("bootstrap resamples must be >= 1 (got ", options.resamples, ")"));
  }
  if (!(options.confidence > 0.0 && options.confidence < 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bootstrap confidence must be in (0, 1) (got ", options.confidence, ")"));
  }
  return absl::OkStatus();
}

double Mean(absl::Span<const double> values) {
  double sum = 0.0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

// Linear interpolation between order statistics at q * (n - 1) (Hyndman & Fan type 7).
double Quantile(const std::vector<double>& sorted, double q) {
  double position = q * static_cast<double>(sorted.size() - 1);
  size_t below = static_cast<size_t>(std::floor(position));
  size_t above = std::min(below + 1, sorted.size() - 1);
  double fraction = position - static_cast<double>(below);
  return sorted[below] + fraction * (sorted[above] - sorted[below]);
}

// The means of `options.resamples` resamples (with replacement) of `values`, sorted.
std::vector<double> SortedResampleMeans(absl::Span<const double> values,
                                        const BootstrapOptions& options) {
  std::mt19937_64 engine(options.seed);
  const uint64_t n = values.size();
  std::vector<double> means(static_cast<size_t>(options.resamples));
  for (double& mean : means) {
    double sum = 0.0;
    for (uint64_t i = 0; i < n; ++i) sum += values[BoundedDraw(n, engine)];
    mean = sum / static_cast<double>(n);
  }
  std::sort(means.begin(), means.end());
  return means;
}

// The mean with the (1-c)/2 and (1+c)/2 quantiles of the resample means as its interval,
// widened to contain the mean where the percentiles miss it (low confidence, skewed values).
v1::MeanEstimate MakeEstimate(double mean, const std::vector<double>& sorted_means,
                              const BootstrapOptions& options) {
  v1::MeanEstimate estimate;
  const double tail = (1.0 - options.confidence) / 2.0;
  estimate.set_mean(mean);
  estimate.mutable_interval()->set_low(std::min(mean, Quantile(sorted_means, tail)));
  estimate.mutable_interval()->set_high(std::max(mean, Quantile(sorted_means, 1.0 - tail)));
  estimate.set_confidence(options.confidence);
  estimate.set_resamples(options.resamples);
  estimate.set_seed(options.seed);
  return estimate;
}

// |sum of s_i d_i| for the signs s_i = -1 where bit i of `flips` is set, else +1.
double FlippedSumMagnitude(absl::Span<const double> differences, uint64_t flips) {
  double sum = 0.0;
  for (size_t i = 0; i < differences.size(); ++i) {
    sum += ((flips >> i) & 1) != 0 ? -differences[i] : differences[i];
  }
  return std::fabs(sum);
}

// |sum of s_i d_i| for signs drawn one random bit per difference from `engine`.
double RandomFlippedSumMagnitude(absl::Span<const double> differences, std::mt19937_64& engine) {
  double sum = 0.0;
  uint64_t bits = 0;
  for (size_t i = 0; i < differences.size(); ++i) {
    if (i % 64 == 0) bits = engine();
    sum += ((bits >> (i % 64)) & 1) != 0 ? -differences[i] : differences[i];
  }
  return std::fabs(sum);
}

using EpisodeKey = std::pair<uint64_t, int64_t>;  // (seed, episode index)

std::string KeyName(const EpisodeKey& key) {
  return absl::StrCat("episode ", key.second, " (seed ", key.first, ")");
}

absl::StatusOr<std::map<EpisodeKey, const v1::EpisodeResult*>> IndexEpisodes(
    const Episodes& episodes, const char* side) {
  std::map<EpisodeKey, const v1::EpisodeResult*> index;
  for (const v1::EpisodeResult& episode : episodes) {
    EpisodeKey key{episode.seed(), episode.episode_index()};
    if (!index.emplace(key, &episode).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("paired comparison: the ", side, " holds ", KeyName(key), " twice"));
    }
  }
  return index;
}

absl::Status CheckSameEpisodes(const std::map<EpisodeKey, const v1::EpisodeResult*>& a,
                               const char* a_side,
                               const std::map<EpisodeKey, const v1::EpisodeResult*>& b,
                               const char* b_side) {
  for (const auto& [key, episode] : a) {
    if (b.count(key) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "paired comparison: ", KeyName(key), " of the ", a_side, " is missing from the ",
          b_side, "; both must be evaluated on the same episodes (one protocol)"));
    }
  }
  return absl::OkStatus();
}

std::string SignFlipName(const v1::Comparison& comparison) {
  return comparison.pairs() <= kMaxExactSignFlipPairs ? "exact sign-flip" : "Monte-Carlo sign-flip";
}

// Episodes cut short by the policy's own invalid action or by physics it destabilized: their
// return stops early, so a policy that fails at once can out-"return" one that tries.
bool EndedEarlyByThePolicy(const v1::EpisodeResult& episode) {
  return episode.end_reason() == "invalid_action" || episode.end_reason() == "unstable";
}

// Counts of episodes ended early by the policy, of the candidate and of the baseline.
struct EarlyEnds {
  int64_t candidate = 0;
  int64_t baseline = 0;
};

void Decide(const CompareOptions& options, const EarlyEnds& early_ends, v1::Comparison* comparison) {
  const int64_t b = comparison->candidate_only();
  const int64_t c = comparison->baseline_only();
  const double mean_difference = comparison->return_difference().mean();
  const bool return_significant = comparison->return_difference_p() < options.alpha && mean_difference != 0.0;
  if (comparison->mcnemar_p() < options.alpha) {
    comparison->set_verdict(b > c ? v1::VERDICT_BETTER : v1::VERDICT_WORSE);
    comparison->set_reason(absl::StrFormat(
        "success: McNemar p = %.4g < alpha %.3g with %d candidate-only vs %d baseline-only successes",
        comparison->mcnemar_p(), options.alpha, b, c));
  } else if (return_significant && mean_difference > 0.0 && early_ends.candidate > early_ends.baseline) {
    comparison->set_verdict(v1::VERDICT_NO_SIGNIFICANT_DIFFERENCE);
    comparison->set_reason(absl::StrFormat(
        "return not trusted: success not significant (McNemar p = %.4g); the candidate's higher return (%s p = "
        "%.4g) comes from episodes cut short: %d of its episodes ended by an invalid action or unstable physics, "
        "%d of the baseline's",
        comparison->mcnemar_p(), SignFlipName(*comparison), comparison->return_difference_p(), early_ends.candidate,
        early_ends.baseline));
  } else if (return_significant) {
    comparison->set_verdict(mean_difference > 0.0 ? v1::VERDICT_BETTER : v1::VERDICT_WORSE);
    comparison->set_reason(absl::StrFormat(
        "return: success not significant (McNemar p = %.4g), %s p = %.4g < alpha %.3g for mean "
        "return difference %.4g over %d pairs",
        comparison->mcnemar_p(), SignFlipName(*comparison), comparison->return_difference_p(), options.alpha,
        mean_difference, comparison->pairs()));
  } else {
    comparison->set_verdict(v1::VERDICT_NO_SIGNIFICANT_DIFFERENCE);
    comparison->set_reason(absl::StrFormat(
        "McNemar p = %.4g and %s p = %.4g of the return difference, both >= alpha %.3g over %d pairs",
        comparison->mcnemar_p(), SignFlipName(*comparison), comparison->return_difference_p(), options.alpha,
        comparison->pairs()));
  }
}

absl::Status CheckCompareOptions(const CompareOptions& options) {
  ROBOLOOP_RETURN_IF_ERROR(Annotate(CheckAlpha(options.alpha), "comparison"));
  const int minimum = MinCompareResamples(options.alpha);
  if (options.bootstrap.resamples < minimum) {
    return absl::InvalidArgumentError(absl::StrCat("comparison resamples must be >= ", minimum, " at alpha ",
                                                   options.alpha, " (got ", options.bootstrap.resamples, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::Interval> WilsonInterval(int64_t successes, int64_t trials, double z) {
  if (trials < 1 || successes < 0 || successes > trials) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Wilson interval needs 0 <= successes <= trials and trials >= 1 (got ", successes, "/",
        trials, ")"));
  }
  const double n = static_cast<double>(trials);
  const double p = static_cast<double>(successes) / n;
  const double z2 = z * z;
  const double denominator = 1.0 + z2 / n;
  const double center = (p + z2 / (2.0 * n)) / denominator;
  const double margin = z * std::sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n)) / denominator;
  v1::Interval interval;
  // center - margin is exactly 0 at 0 successes (and center + margin 1 at all successes) in exact
  // arithmetic; rounding leaves ~1e-18, which would rank one 0/n row above another.
  interval.set_low(successes == 0 ? 0.0 : std::max(0.0, center - margin));
  interval.set_high(successes == trials ? 1.0 : std::min(1.0, center + margin));
  return interval;
}

uint64_t BoundedDraw(uint64_t bound, std::mt19937_64& engine) {
  ROBOLOOP_CHECK(bound >= 1);
  // Reject the lowest 2^64 mod bound values so that every residue is equally likely.
  const uint64_t threshold = (0 - bound) % bound;
  while (true) {
    uint64_t x = engine();
    if (x >= threshold) return x % bound;
  }
}

absl::StatusOr<v1::MeanEstimate> BootstrapMean(absl::Span<const double> values,
                                               const BootstrapOptions& options) {
  if (values.empty()) return absl::InvalidArgumentError("bootstrap of no values");
  ROBOLOOP_RETURN_IF_ERROR(CheckBootstrapOptions(options));
  return MakeEstimate(Mean(values), SortedResampleMeans(values, options), options);
}

absl::StatusOr<v1::LengthStats> ComputeLengthStats(absl::Span<const int32_t> lengths) {
  if (lengths.empty()) return absl::InvalidArgumentError("length statistics of no episodes");
  std::vector<int32_t> sorted(lengths.begin(), lengths.end());
  std::sort(sorted.begin(), sorted.end());
  double sum = 0.0;
  for (int32_t length : sorted) sum += length;
  const size_t n = sorted.size();
  v1::LengthStats stats;
  stats.set_mean(sum / static_cast<double>(n));
  stats.set_min(sorted.front());
  stats.set_max(sorted.back());
  stats.set_median(n % 2 == 1 ? sorted[n / 2]
                              : (static_cast<double>(sorted[n / 2 - 1]) + sorted[n / 2]) / 2.0);
  return stats;
}

absl::StatusOr<v1::Aggregates> Aggregate(const Episodes& episodes,
                                         const BootstrapOptions& options) {
  if (episodes.empty()) return absl::InvalidArgumentError("aggregates of no episodes");
  std::vector<double> returns;
  std::vector<int32_t> lengths;
  v1::Aggregates aggregates;
  int64_t successes = 0;
  for (const v1::EpisodeResult& episode : episodes) {
    returns.push_back(episode.episode_return());
    lengths.push_back(episode.length());
    successes += episode.success() ? 1 : 0;
    (*aggregates.mutable_end_reasons())[episode.end_reason()] += 1;
  }
  const int64_t trials = static_cast<int64_t>(episodes.size());
  v1::RateEstimate* success = aggregates.mutable_success();
  success->set_successes(successes);
  success->set_trials(trials);
  success->set_rate(static_cast<double>(successes) / static_cast<double>(trials));
  ROBOLOOP_ASSIGN_OR_RETURN(*success->mutable_interval(), WilsonInterval(successes, trials));
  ROBOLOOP_ASSIGN_OR_RETURN(*aggregates.mutable_episode_return(), BootstrapMean(returns, options));
  ROBOLOOP_ASSIGN_OR_RETURN(*aggregates.mutable_length(), ComputeLengthStats(lengths));
  return aggregates;
}

absl::StatusOr<double> McNemarExactP(int64_t b, int64_t c) {
  if (b < 0 || c < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("McNemar counts must be >= 0 (got b = ", b, ", c = ", c, ")"));
  }
  const int64_t n = b + c;
  if (n == 0) return 1.0;
  // P(X <= k) for X ~ Binomial(n, 1/2), each term in log space to stay finite for large n.
  const int64_t k = std::min(b, c);
  const double log_half_n = static_cast<double>(n) * std::log(0.5);
  const double log_n_factorial = std::lgamma(static_cast<double>(n) + 1.0);
  double tail = 0.0;
  for (int64_t i = 0; i <= k; ++i) {
    double log_choose = log_n_factorial - std::lgamma(static_cast<double>(i) + 1.0) -
                        std::lgamma(static_cast<double>(n - i) + 1.0);
    tail += std::exp(log_choose + log_half_n);
  }
  return std::min(1.0, 2.0 * tail);
}

absl::Status CheckAlpha(double alpha) {
  if (alpha >= kMinAlpha && alpha < 1.0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("alpha must be in [", kMinAlpha, ", 1), got ", alpha));
}

int MinCompareResamples(double alpha) {
  const double minimum = std::max(1000.0, std::ceil(10.0 / alpha));
  return static_cast<int>(std::min(minimum, static_cast<double>(std::numeric_limits<int>::max())));
}

CompareOptions CompareOptionsAt(double alpha) {
  CompareOptions options;
  options.alpha = alpha;
  if (CheckAlpha(alpha).ok()) {
    options.bootstrap.resamples = std::max(options.bootstrap.resamples, MinCompareResamples(alpha));
  }
  return options;
}

absl::StatusOr<SignFlipResult> SignFlipTest(absl::Span<const double> differences, int resamples,
                                            uint64_t seed) {
  if (differences.empty()) return absl::InvalidArgumentError("sign-flip test of no differences");
  if (resamples < 1) {
    return absl::InvalidArgumentError(absl::StrCat("sign-flip resamples must be >= 1 (got ", resamples, ")"));
  }
  double scale = 0.0;
  for (double d : differences) scale += std::fabs(d);
  // Assignments whose statistic equals the observed one up to rounding count as "at least as extreme".
  const double observed = FlippedSumMagnitude(differences, 0) - 1e-9 * scale;
  SignFlipResult result;
  int64_t extreme = 0;
  if (differences.size() <= static_cast<size_t>(kMaxExactSignFlipPairs)) {
    result.exact = true;
    result.assignments = int64_t{1} << differences.size();
    for (int64_t flips = 0; flips < result.assignments; ++flips) {
      extreme += FlippedSumMagnitude(differences, static_cast<uint64_t>(flips)) >= observed ? 1 : 0;
    }
    result.p = static_cast<double>(extreme) / static_cast<double>(result.assignments);
    return result;
  }
  std::mt19937_64 engine(seed);
  result.assignments = resamples;
  for (int draw = 0; draw < resamples; ++draw) {
    extreme += RandomFlippedSumMagnitude(differences, engine) >= observed ? 1 : 0;
  }
  result.p = static_cast<double>(extreme + 1) / static_cast<double>(resamples + 1);
  return result;
}

absl::StatusOr<v1::Comparison> ComparePaired(const Episodes& candidate,
                                             const Episodes& baseline,
                                             const CompareOptions& options) {
  ROBOLOOP_RETURN_IF_ERROR(CheckCompareOptions(options));
  if (candidate.empty() || baseline.empty()) {
    return absl::InvalidArgumentError("paired comparison of an evaluation with no episodes");
  }
  ROBOLOOP_ASSIGN_OR_RETURN(auto candidate_index, IndexEpisodes(candidate, "candidate"));
  ROBOLOOP_ASSIGN_OR_RETURN(auto baseline_index, IndexEpisodes(baseline, "baseline"));
  ROBOLOOP_RETURN_IF_ERROR(CheckSameEpisodes(candidate_index, "candidate", baseline_index, "baseline"));
  ROBOLOOP_RETURN_IF_ERROR(CheckSameEpisodes(baseline_index, "baseline", candidate_index, "candidate"));

  v1::Comparison comparison;
  int64_t counts[2][2] = {{0, 0}, {0, 0}};  // [candidate success][baseline success]
  std::vector<double> differences;
  EarlyEnds early_ends;
  for (const auto& [key, ours] : candidate_index) {
    const v1::EpisodeResult* theirs = baseline_index.at(key);
    counts[ours->success()][theirs->success()] += 1;
    early_ends.candidate += EndedEarlyByThePolicy(*ours) ? 1 : 0;
    early_ends.baseline += EndedEarlyByThePolicy(*theirs) ? 1 : 0;
    differences.push_back(ours->episode_return() - theirs->episode_return());
  }
  comparison.set_pairs(static_cast<int64_t>(differences.size()));
  comparison.set_both_succeeded(counts[1][1]);
  comparison.set_candidate_only(counts[1][0]);
  comparison.set_baseline_only(counts[0][1]);
  comparison.set_neither_succeeded(counts[0][0]);
  ROBOLOOP_ASSIGN_OR_RETURN(double p, McNemarExactP(counts[1][0], counts[0][1]));
  comparison.set_mcnemar_p(p);

  BootstrapOptions bootstrap = options.bootstrap;
  bootstrap.confidence = 1.0 - options.alpha;
  ROBOLOOP_RETURN_IF_ERROR(CheckBootstrapOptions(bootstrap));
  std::vector<double> sorted_means = SortedResampleMeans(differences, bootstrap);
  *comparison.mutable_return_difference() = MakeEstimate(Mean(differences), sorted_means, bootstrap);
  ROBOLOOP_ASSIGN_OR_RETURN(SignFlipResult sign_flip, SignFlipTest(differences, bootstrap.resamples, bootstrap.seed));
  comparison.set_return_difference_p(sign_flip.p);
  comparison.set_alpha(options.alpha);
  Decide(options, early_ends, &comparison);
  return comparison;
}

const char* VerdictName(v1::ComparisonVerdict verdict) {
  switch (verdict) {
    case v1::VERDICT_BETTER:
      return "better";
    case v1::VERDICT_WORSE:
      return "worse";
    case v1::VERDICT_NO_SIGNIFICANT_DIFFERENCE:
      return "no significant difference";
    default:
      return "unspecified";
  }
}

}  // namespace roboloop::eval
