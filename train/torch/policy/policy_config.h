// The options of a trainable policy (issue 6, req 2), parsed from the JSON a checkpoint manifest
// stores under policy.options. The options' defaults and types are the policy kind's schema
// (registry/policy_kinds/); the shapes every model shares are fields here, and each model reads
// its architecture's options from `options` (train/torch/policy/policy_models.cc). Inside
// libroboloop_torch.so only.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>


namespace roboloop::train {

// Everything needed to rebuild a policy module.
struct PolicyConfig {
  std::string kind;          // a trainable policy kind (registry/policy_kind.h)
  int64_t obs_dim = 0;       // floats of one observation row
  int64_t action_dim = 0;    // floats of one action
  int64_t history = 1;       // observation steps the policy reads (current and history-1 past)
  int64_t chunk = 1;         // future actions it predicts per call
  nlohmann::json options;    // every option of the kind, defaults filled; each model reads its own
};

// Parses the options of a trainable kind, {kind, obs_dim, action_dim, ...}, filling absent
// options with the kind's defaults; options of another kind are rejected. Throws c10::Error
// naming the option at fault (unknown kinds list the trainable ones).
PolicyConfig ParsePolicyConfig(const nlohmann::json& json);

}  // namespace roboloop::train
