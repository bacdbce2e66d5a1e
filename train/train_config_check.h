// The ranges of a TrainConfig's numbers, checked once before any rank starts: by `roboloop
// train` (cli/train.cc), by TrainService before it spawns the worker, and, for the flags, when
// the command line is parsed (train_job.cc). Torch-free.
#pragma once

#include <limits>
#include <string>

#include "absl/status/status.h"
#include "roboloop/v1/train.pb.h"

namespace roboloop::train {

// An interval of finite numbers; an infinite bound is "no bound" (NaN and infinities are never in range).
struct NumberRange {
  double low = -std::numeric_limits<double>::infinity();
  bool low_open = false;  // true: `low` itself is out of range
  double high = std::numeric_limits<double>::infinity();
  bool high_open = false;  // true: `high` itself is out of range
};

// Finite numbers > 0.
inline constexpr NumberRange kPositive{0, true};
// Finite numbers >= 0.
inline constexpr NumberRange kNonNegative{0, false};

// "" when `value` lies in `range`; otherwise what is wrong, e.g. "must be a finite number > 0, got nan".
std::string RangeViolation(double value, const NumberRange& range);

// Checks `config` (defaults already filled: WithDefaults) for numbers out of range, a model name
// the registry would refuse (registry/names.h) and no_packing with a policy kind other than the
// transformer. InvalidArgument naming the key and its
// flag, e.g. "optimizer.min_lr_ratio must be in [0, 1], got -3"; every problem found, one per line.
absl::Status CheckTrainConfig(const v1::TrainConfig& config);

}  // namespace roboloop::train
