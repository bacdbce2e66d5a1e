// Policy kinds (issue 27): the torch-free registry of what a checkpoint's `policy.kind` may
// name. A kind is a name, an options schema with its defaults and what roboloop does with it
// (train it, export it, the suffix of its weights blob). The models themselves live behind the
// torch boundary (libroboloop_torch.so), which loads a policy by kind name.
//
// Adding a kind is one file that builds a PolicyKind and one registration line: in
// registry/builtin_policy_kinds.cc for a built-in kind, or a PolicyKindRegistration in the
// file itself (docs/policy-kinds.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace roboloop::registry {

// The value types policy options take.
enum class PolicyOptionType {
  kPositiveInteger,      // an integer > 0
  kPositiveIntegerList,  // an array of integers > 0
  kBoolean,              // true or false
  kString,               // a string (one of `choices` when those are given)
  kCameraList,           // an array of {name, width, height}: name a non-empty string unique in
                         // the list, width and height integers in 1..2048 (docs/vision.md)
};

// One option of a kind's schema.
struct PolicyOption {
  std::string name;                            // key in policy.options
  PolicyOptionType type = PolicyOptionType::kPositiveInteger;  // what its value must be
  std::optional<nlohmann::json> default_value;  // used when the option is absent; none = required
  std::vector<std::string> choices;            // kString: the accepted values (empty = any)
  std::string help;                            // one line for docs and errors
};

// What a kind's `policy` blob holds, which decides how the torch library loads it.
enum class PolicyWeights {
  kModelWeights,       // named tensors of a model the torch library builds for the kind
  kTorchScriptModule,  // a torch.jit.save file, run as it is
};

// A policy kind.
struct PolicyKind {
  std::string name;                   // policy.kind in manifests and TrainConfig
  std::string summary;                // one line: what the model is
  std::vector<PolicyOption> options;  // the options schema; keys outside it are rejected
  bool trainable = false;             // `roboloop train` builds, trains and continues it
  bool exportable = false;            // `roboloop export` writes it for roboloop_policy.py
  std::string blob_suffix = ".safetensors";  // file suffix of its `policy` blob
  PolicyWeights weights = PolicyWeights::kModelWeights;  // what that blob holds
};

// The options every chunk-predicting kind shares: obs_dim and action_dim (required), history
// and chunk (default 1).
std::vector<PolicyOption> ChunkPolicyOptions();

// The options of a kind that can see (docs/vision.md, "Policies that see"): `cameras` (default
// [], state-only) and the image encoder's `encoder_channels` (32), `encoder_blocks` (2) and
// `keypoints` (32 per camera).
std::vector<PolicyOption> CameraPolicyOptions();

// Adds `kind` to the registry. InvalidArgument when its name is empty or an option is
// declared twice; AlreadyExists when a kind of that name is registered. Thread-safe.
absl::Status RegisterPolicyKind(PolicyKind kind);

// Registers a kind at static initialisation, from the file that defines it; aborts with the
// registration error (a programming error) when RegisterPolicyKind fails.
class PolicyKindRegistration {
 public:
  explicit PolicyKindRegistration(PolicyKind kind);
};

// The registered kind `name` (the built-in ones are always registered). InvalidArgument
// "unknown policy kind '<name>' (known: ...)" otherwise. The pointer lives as long as the process.
absl::StatusOr<const PolicyKind*> FindPolicyKind(absl::string_view name);

// Names of every registered kind, sorted.
std::vector<std::string> PolicyKindNames();

// Names of the registered kinds with `trainable` (or `exportable`) set, sorted.
std::vector<std::string> TrainablePolicyKindNames();
std::vector<std::string> ExportablePolicyKindNames();

// The kind `roboloop train` builds when its config names none.
const std::string& DefaultPolicyKindName();

// Checks `options` against the schema of `kind`: a JSON object whose keys are options of the
// kind (or "kind" equal to its name) with values of the option's type. Required options may
// be absent. InvalidArgument naming the option and what is wrong.
absl::Status CheckPolicyOptions(const PolicyKind& kind, const nlohmann::json& options);

// `options` checked, with every absent option set to its default and "kind" set to the kind's
// name. InvalidArgument as CheckPolicyOptions, or naming a required option that is absent.
absl::StatusOr<nlohmann::json> CompletePolicyOptions(const PolicyKind& kind,
                                                     const nlohmann::json& options);

}  // namespace roboloop::registry
