#include "sim/robustness.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace roboloop::sim {
namespace {
absl::Status ValidateRange(const ScaleRange& range, const char* field) {
  if (!(range.low > 0.0) || !(range.high >= range.low)) {
    return absl::InvalidArgumentError(absl::StrCat("robustness option ", field, ": range [",
                                                   range.low, ", ", range.high,
                                                   "] must satisfy 0 < low <= high"));
  }
  return absl::OkStatus();
}
}  // namespace

absl::Status ValidateRobustness(const RobustnessOptions& options, const ObsSpec& obs) {
  for (const auto& [key, std] : options.obs_noise_std) {
    if (obs.offset(key) < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "robustness option obs_noise_std: unknown observation key '", key, "'; keys are ",
          DescribeObsSpec(obs)));
    }
    if (!(std >= 0.0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("robustness option obs_noise_std['", key, "'] must be >= 0"));
    }
  }
  if (!(options.action_noise_std >= 0.0)) {
    return absl::InvalidArgumentError("robustness option action_noise_std must be >= 0");
  }
  if (options.action_delay < 0) {
    return absl::InvalidArgumentError("robustness option action_delay must be >= 0");
  }
  ROBOLOOP_RETURN_IF_ERROR(ValidateRange(options.body_mass, "body_mass"));
  ROBOLOOP_RETURN_IF_ERROR(ValidateRange(options.geom_friction, "geom_friction"));
  return ValidateRange(options.actuator_gain, "actuator_gain");
}

}  // namespace roboloop::sim
