// Range checks of a TrainConfig.
#include "train/train_config_check.h"

#include <cmath>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "registry/names.h"

namespace roboloop::train {
namespace {

// The range in words: "a finite number > 0", "in [0, 1)".
std::string Describe(const NumberRange& range) {
  const bool low = std::isfinite(range.low);
  const bool high = std::isfinite(range.high);
  if (low && high) {
    return absl::StrFormat("in %s%g, %g%s", range.low_open ? "(" : "[", range.low, range.high,
                           range.high_open ? ")" : "]");
  }
  if (low) return absl::StrFormat("a finite number %s %g", range.low_open ? ">" : ">=", range.low);
  if (high) return absl::StrFormat("a finite number %s %g", range.high_open ? "<" : "<=", range.high);
  return "a finite number";
}

bool InRange(double value, const NumberRange& range) {
  if (!std::isfinite(value)) return false;
  if (range.low_open ? value <= range.low : value < range.low) return false;
  return range.high_open ? value < range.high : value <= range.high;
}

// One checked key: the config key, the flag that sets it ("" = none), its value and range.
struct CheckedNumber {
  const char* key;
  const char* flag;
  double value;
  NumberRange range;
};

std::vector<CheckedNumber> CheckedNumbers(const v1::TrainConfig& c) {
  const v1::OptimizerSpec& o = c.optimizer();
  const auto d = [](auto v) { return static_cast<double>(v); };
  return {
      {"optimizer.lr", "--lr", o.lr(), kPositive},
      {"optimizer.weight_decay", "", o.weight_decay(), kNonNegative},
      {"optimizer.warmup_steps", "", d(o.warmup_steps()), kNonNegative},
      {"optimizer.min_lr_ratio", "", o.min_lr_ratio(), NumberRange{0, false, 1, false}},
      {"optimizer.clip_norm", "", o.clip_norm(), kNonNegative},
      {"optimizer.ema_decay", "", o.ema_decay(), NumberRange{0, false, 1, true}},
      {"steps", "--steps", d(c.steps()), kPositive},
      {"batch_size", "--batch-size", d(c.batch_size()), kPositive},
      {"checkpoint_every", "--checkpoint-every", d(c.checkpoint_every()), kNonNegative},
      {"validate_every", "--validate-every", d(c.validate_every()), kNonNegative},
      {"token_budget", "", d(c.token_budget()), kPositive},
      {"threads", "--threads", d(c.threads()), kPositive},
      {"loader_workers", "", d(c.loader_workers()), kPositive},
      {"prefetch", "", d(c.prefetch()), kPositive},
      {"log_every", "", d(c.log_every()), kPositive},
      {"rendezvous_timeout_s", "--rendezvous-timeout", c.rendezvous_timeout_s(), kPositive},
      {"data_cache_mb", "--data-cache-mb", c.data_cache_mb(), kNonNegative},
  };
}

}  // namespace

std::string RangeViolation(double value, const NumberRange& range) {
  if (InRange(value, range)) return "";
  return absl::StrCat("must be ", Describe(range), ", got ", absl::StrFormat("%g", value));
}

absl::Status CheckTrainConfig(const v1::TrainConfig& config) {
  std::vector<std::string> problems;
  for (const CheckedNumber& number : CheckedNumbers(config)) {
    const std::string violation = RangeViolation(number.value, number.range);
    if (violation.empty()) continue;
    const std::string flag = *number.flag == '\0' ? "" : absl::StrCat(" (", number.flag, ")");
    problems.push_back(absl::StrCat("config key ", number.key, flag, " ", violation));
  }
  // Checked here, not when the first checkpoint is registered after training has run. A
  // pipeline's `${...}` reference is checked once substituted, by TrainService.
  if (!config.model().empty() && !absl::StrContains(config.model(), "${")) {
    if (absl::Status name = registry::ValidateName("model", config.model()); !name.ok()) {
      problems.push_back(absl::StrCat("config key model (--model): ", name.message()));
    }
  }
  // Packing is how the transformer attends over a batch; no other kind has sequences to pack.
  if (config.no_packing() && config.policy().kind() != "transformer") {
    problems.push_back(absl::StrCat("config key no_packing (--no-packing) applies to policy 'transformer' only, not to '",
                                    config.policy().kind(), "'"));
  }
  // A packed sample holds its `history` observation tokens and its `chunk` action queries.
  const v1::PolicySpec& policy = config.policy();
  const int64_t sample_tokens = static_cast<int64_t>(policy.history()) + policy.chunk();
  if (policy.kind() == "transformer" && !config.no_packing() && sample_tokens > config.token_budget()) {
    problems.push_back(absl::StrCat("policy.history (--history) ", policy.history(), " + policy.chunk (--chunk) ",
                                    policy.chunk(), " tokens of a sample exceed config key token_budget ",
                                    config.token_budget(), ": raise token_budget or give --no-packing"));
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(problems, "\n"));
}

}  // namespace roboloop::train
