// Parsing and printing of PolicyConfig.
#include "train/torch/policy/policy_config.h"

#include <set>

#include <c10/util/Exception.h>

namespace roboloop::train {
namespace {

const std::set<std::string>& KeysOf(const std::string& kind) {
  static const std::set<std::string> kMlp = {"kind", "obs_dim", "action_dim", "history",
                                             "chunk", "hidden", "activation"};
  static const std::set<std::string> kTransformer = {
      "kind", "obs_dim", "action_dim", "history", "chunk", "d_model",
      "layers", "heads", "ffn", "flow_matching", "flow_steps"};
  return kind == "mlp" ? kMlp : kTransformer;
}

int64_t PositiveInt(const nlohmann::json& json, const char* key, int64_t fallback, bool required) {
  if (!json.contains(key)) {
    TORCH_CHECK(!required, "policy option ", key, " is required");
    return fallback;
  }
  const nlohmann::json& value = json[key];
  TORCH_CHECK(value.is_number_integer() && value.get<int64_t>() > 0, "policy option ", key,
              " must be a positive integer, got ", value.dump());
  return value.get<int64_t>();
}

kernels::Activation ParseActivation(const std::string& name) {
  if (name == "relu") return kernels::Activation::kRelu;
  if (name == "gelu") return kernels::Activation::kGelu;
  if (name == "silu") return kernels::Activation::kSilu;
  if (name == "tanh") return kernels::Activation::kTanh;
  TORCH_CHECK(false, "policy option activation: unknown '", name,
              "' (known: relu, gelu, silu, tanh)");
}

MlpOptions ParseMlp(const nlohmann::json& json) {
  MlpOptions options;
  if (json.contains("hidden")) {
    const nlohmann::json& hidden = json["hidden"];
    TORCH_CHECK(hidden.is_array(), "policy option hidden must be an array of positive integers");
    options.hidden.clear();
    for (const nlohmann::json& width : hidden) {
      TORCH_CHECK(width.is_number_integer() && width.get<int64_t>() > 0,
                  "policy option hidden must hold positive integers, got ", width.dump());
      options.hidden.push_back(width.get<int64_t>());
    }
  }
  if (json.contains("activation")) {
    TORCH_CHECK(json["activation"].is_string(), "policy option activation must be a string");
    options.activation = ParseActivation(json["activation"].get<std::string>());
  }
  return options;
}

TransformerOptions ParseTransformer(const nlohmann::json& json) {
  TransformerOptions options;
  options.d_model = PositiveInt(json, "d_model", options.d_model, false);
  options.layers = PositiveInt(json, "layers", options.layers, false);
  options.heads = PositiveInt(json, "heads", options.heads, false);
  options.ffn = PositiveInt(json, "ffn", options.ffn, false);
  options.flow_steps = PositiveInt(json, "flow_steps", options.flow_steps, false);
  if (json.contains("flow_matching")) {
    TORCH_CHECK(json["flow_matching"].is_boolean(), "policy option flow_matching must be a boolean");
    options.flow_matching = json["flow_matching"].get<bool>();
  }
  TORCH_CHECK(options.d_model % options.heads == 0, "policy option d_model (", options.d_model,
              ") must be a multiple of heads (", options.heads, ")");
  return options;
}

}  // namespace

const std::vector<std::string>& TrainablePolicyKinds() {
  static const std::vector<std::string> kKinds = {"mlp", "transformer"};
  return kKinds;
}

std::string ActivationName(kernels::Activation activation) {
  switch (activation) {
    case kernels::Activation::kRelu: return "relu";
    case kernels::Activation::kGelu: return "gelu";
    case kernels::Activation::kSilu: return "silu";
    case kernels::Activation::kTanh: return "tanh";
  }
  return "relu";
}

PolicyConfig ParsePolicyConfig(const nlohmann::json& json) {
  TORCH_CHECK(json.is_object(), "policy options must be a JSON object, got ", json.dump());
  PolicyConfig config;
  if (json.contains("kind")) {
    TORCH_CHECK(json["kind"].is_string(), "policy option kind must be a string");
    config.kind = json["kind"].get<std::string>();
  }
  TORCH_CHECK(config.kind == "mlp" || config.kind == "transformer", "unknown policy '",
              config.kind, "' (known: mlp, transformer)");
  for (const auto& [key, value] : json.items()) {
    TORCH_CHECK(KeysOf(config.kind).count(key) == 1, "policy option ", key,
                " is not an option of policy ", config.kind);
  }
  config.obs_dim = PositiveInt(json, "obs_dim", 0, true);
  config.action_dim = PositiveInt(json, "action_dim", 0, true);
  config.history = PositiveInt(json, "history", 1, false);
  config.chunk = PositiveInt(json, "chunk", 1, false);
  if (config.kind == "mlp") {
    config.mlp = ParseMlp(json);
  } else {
    config.transformer = ParseTransformer(json);
  }
  return config;
}

nlohmann::json PolicyConfigToJson(const PolicyConfig& config) {
  nlohmann::json json = {{"kind", config.kind},         {"obs_dim", config.obs_dim},
                         {"action_dim", config.action_dim}, {"history", config.history},
                         {"chunk", config.chunk}};
  if (config.kind == "mlp") {
    json["hidden"] = config.mlp.hidden;
    json["activation"] = ActivationName(config.mlp.activation);
  } else {
    const TransformerOptions& t = config.transformer;
    json["d_model"] = t.d_model;
    json["layers"] = t.layers;
    json["heads"] = t.heads;
    json["ffn"] = t.ffn;
    json["flow_matching"] = t.flow_matching;
    json["flow_steps"] = t.flow_steps;
  }
  return json;
}

}  // namespace roboloop::train
