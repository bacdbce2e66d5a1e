// A TrainConfig's PolicySpec as policy options of its kind (registry/policy_kind.h). The spec's
// fields are read by option name, so a kind whose options have PolicySpec fields of the same
// name needs no code here.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "roboloop/v1/train.pb.h"

namespace roboloop::train {

// Sets an empty kind to the default kind and every unset (zero or empty) field that is an
// option of the spec's kind to the option's default. A spec of an unknown kind keeps its fields.
void FillPolicySpecDefaults(v1::PolicySpec& spec);

// The complete policy options of `spec` for a dataset with `obs_dim` and `action_dim`: every
// option of the kind that is a PolicySpec field, taken from the spec when set and from the
// kind's defaults otherwise. InvalidArgument "unknown policy '<kind>' (known: <trainable kinds>)"
// for a kind that is unknown or not trainable, or naming an option with a bad value.
absl::StatusOr<nlohmann::json> PolicyOptionsFromSpec(const v1::PolicySpec& spec, int64_t obs_dim,
                                                     int64_t action_dim);

// The PolicySpec of a checkpoint's policy: `kind` and every option in `options` that is a
// PolicySpec field (e.g. obs_dim is not; history is). The inverse of PolicyOptionsFromSpec.
v1::PolicySpec PolicySpecFromOptions(const std::string& kind, const nlohmann::json& options);

}  // namespace roboloop::train
