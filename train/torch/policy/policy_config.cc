// Parsing of PolicyConfig: the kind's schema (registry/policy_kind.h) checks the options and
// fills the defaults; this file turns them into the models' structs.
#include "train/torch/policy/policy_config.h"

#include <c10/util/Exception.h>

#include "absl/strings/str_join.h"
#include "registry/policy_kind.h"

namespace roboloop::train {
namespace {

kernels::Activation ParseActivation(const std::string& name) {
  if (name == "relu") return kernels::Activation::kRelu;
  if (name == "gelu") return kernels::Activation::kGelu;
  if (name == "silu") return kernels::Activation::kSilu;
  if (name == "tanh") return kernels::Activation::kTanh;
  TORCH_CHECK(false, "policy option activation: unknown '", name, "' (known: relu, gelu, silu, tanh)");
}

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

MlpOptions ParseMlp(const nlohmann::json& json) {
  MlpOptions options;
  options.hidden = json.at("hidden").get<std::vector<int64_t>>();
  options.activation = ParseActivation(json.at("activation").get<std::string>());
  return options;
}

TransformerOptions ParseTransformer(const nlohmann::json& json) {
  TransformerOptions options;
  options.d_model = json.at("d_model").get<int64_t>();
  options.layers = json.at("layers").get<int64_t>();
  options.heads = json.at("heads").get<int64_t>();
  options.ffn = json.at("ffn").get<int64_t>();
  options.flow_matching = json.at("flow_matching").get<bool>();
  options.flow_steps = json.at("flow_steps").get<int64_t>();
  TORCH_CHECK(options.d_model % options.heads == 0, "policy option d_model (", options.d_model,
              ") must be a multiple of heads (", options.heads, ")");
  return options;
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
  if (options.contains("hidden")) config.mlp = ParseMlp(options);
  if (options.contains("d_model")) config.transformer = ParseTransformer(options);
  return config;
}

}  // namespace roboloop::train
