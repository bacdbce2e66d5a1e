// Parsing of PolicyConfig: the kind's schema (registry/policy_kind.h) checks the options and
// fills the defaults.
#include "train/torch/policy/policy_config.h"

#include <c10/util/Exception.h>

#include "absl/strings/str_join.h"
#include "registry/policy_kind.h"

namespace roboloop::train {
namespace {

bool HasOption(const registry::PolicyKind& kind, const std::string& name) {
  for (const registry::PolicyOption& option : kind.options) {
    if (option.name == name) return true;
  }
  return false;
}

// The trainable kind `json` names.
const registry::PolicyKind& TrainableKind(const nlohmann::json& json) {
  const std::string known = absl::StrJoin(registry::TrainablePolicyKindNames(), ", ");
  TORCH_CHECK(json.contains("kind") && json["kind"].is_string(), "policy option kind must name a policy (known: ",
              known, ")");
  const std::string name = json["kind"].get<std::string>();
  absl::StatusOr<const registry::PolicyKind*> kind = registry::FindPolicyKind(name);
  TORCH_CHECK(kind.ok() && (*kind)->trainable, "unknown policy '", name, "' (known: ", known, ")");
  return **kind;
}

// The options of `json` with the kind's defaults filled in.
nlohmann::json CompleteOptions(const registry::PolicyKind& kind, const nlohmann::json& json) {
  for (const auto& [key, value] : json.items()) {
    TORCH_CHECK(key == "kind" || HasOption(kind, key), "policy option ", key, " is not an option of policy ",
                kind.name);
  }
  absl::StatusOr<nlohmann::json> complete = registry::CompletePolicyOptions(kind, json);
  TORCH_CHECK(complete.ok(), complete.status().message());
  return *complete;
}

}  // namespace

PolicyConfig ParsePolicyConfig(const nlohmann::json& json) {
  TORCH_CHECK(json.is_object(), "policy options must be a JSON object, got ", json.dump());
  const registry::PolicyKind& kind = TrainableKind(json);
  const nlohmann::json options = CompleteOptions(kind, json);
  PolicyConfig config;
  config.kind = kind.name;
  config.obs_dim = options.at("obs_dim").get<int64_t>();
  config.action_dim = options.at("action_dim").get<int64_t>();
  config.history = options.at("history").get<int64_t>();
  config.chunk = options.at("chunk").get<int64_t>();
  config.options = options;
  return config;
}

}  // namespace roboloop::train
