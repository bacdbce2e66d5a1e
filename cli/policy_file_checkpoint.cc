#include "cli/policy_file_checkpoint.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/fs.h"
#include "common/ids.h"
#include "common/status.h"
#include "common/version.h"
#include "train/normalization.h"

namespace roboloop::cli {
namespace {

// "torchscript (.pt), mlp (.safetensors), ...": every kind and the file its blob is.
std::string KindsAndSuffixes() {
  std::vector<std::string> kinds;
  for (const std::string& name : registry::PolicyKindNames()) {
    kinds.push_back(absl::StrCat(name, " (", (*registry::FindPolicyKind(name))->blob_suffix, ")"));
  }
  return absl::StrJoin(kinds, ", ");
}

registry::ArraySpecs ObsSpecsOf(const sim::ObsSpec& obs_spec) {
  registry::ArraySpecs specs;
  for (const sim::ArraySpec& key : obs_spec.keys) {
    specs.names.push_back(key.name);
    specs.shapes.emplace_back(key.shape.begin(), key.shape.end());
  }
  for (const sim::CameraSpec& camera : obs_spec.cameras) {
    specs.cameras.push_back({camera.name, camera.camera, camera.width, camera.height});
  }
  return specs;
}

// `options` with obs_dim and action_dim set to the task's where the kind has them and they are absent.
nlohmann::json WithTaskDims(const registry::PolicyKind& kind, nlohmann::json options, const sim::Task& task) {
  for (const registry::PolicyOption& option : kind.options) {
    if (options.contains(option.name)) continue;
    if (option.name == "obs_dim") options["obs_dim"] = task.obs_spec().size();
    if (option.name == "action_dim") options["action_dim"] = task.action_spec().size();
  }
  return options;
}

absl::Status CheckStatsSize(const std::string& file, const char* side, size_t size, int expected) {
  if (static_cast<int>(size) == expected) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("normalization file ", file, ": ", side, ".mean holds ", size,
                                                 " numbers, the task has ", expected));
}

// The normalization JSON of `file`, checked against the task's obs floats and action dims.
absl::StatusOr<nlohmann::json> ReadNormalization(const std::string& file, const sim::Task& task) {
  if (file.empty()) return nlohmann::json::object();
  ROBOLOOP_ASSIGN_OR_RETURN(std::string text, ReadFile(file));
  nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat("normalization file ", file, ": not a JSON object"));
  }
  absl::StatusOr<train::Normalization> stats = train::NormalizationFromJson(json);
  if (!stats.ok()) return Annotate(stats.status(), absl::StrCat("normalization file ", file));
  ROBOLOOP_RETURN_IF_ERROR(CheckStatsSize(file, "obs", stats->obs_mean.size(), task.obs_spec().size()));
  ROBOLOOP_RETURN_IF_ERROR(CheckStatsSize(file, "action", stats->action_mean.size(), task.action_spec().size()));
  return train::NormalizationToJson(*stats);
}

}  // namespace

absl::StatusOr<const registry::PolicyKind*> PolicyKindForFile(const std::string& policy_file,
                                                              const std::string& kind) {
  if (!kind.empty()) return registry::FindPolicyKind(kind);
  std::vector<const registry::PolicyKind*> matching;
  for (const std::string& name : registry::PolicyKindNames()) {
    const registry::PolicyKind* candidate = *registry::FindPolicyKind(name);
    if (absl::EndsWith(policy_file, candidate->blob_suffix)) matching.push_back(candidate);
  }
  if (matching.size() == 1) return matching.front();
  return absl::InvalidArgumentError(absl::StrCat(
      "policy file ", policy_file, ": cannot tell its policy kind from the file name; pass --kind (",
      KindsAndSuffixes(), ")"));
}

absl::StatusOr<registry::CheckpointManifest> ManifestForPolicyFile(const PolicyFileRegistration& registration,
                                                                   const sim::Task& task) {
  ROBOLOOP_ASSIGN_OR_RETURN(const registry::PolicyKind* kind,
                            PolicyKindForFile(registration.policy_file, registration.kind));
  if (!registration.options.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat("policy options must be a JSON object, got ",
                                                   registration.options.dump()));
  }
  registry::CheckpointManifest manifest;
  manifest.model = registration.model;
  manifest.policy.kind = kind->name;
  absl::StatusOr<nlohmann::json> options =
      registry::CompletePolicyOptions(*kind, WithTaskDims(*kind, registration.options, task));
  if (!options.ok()) return Annotate(options.status(), absl::StrCat("policy file ", registration.policy_file));
  manifest.policy.options = *options;
  manifest.obs_spec = ObsSpecsOf(task.obs_spec());
  manifest.action_spec.names = {"action"};
  manifest.action_spec.shapes = {{task.action_spec().size()}};
  ROBOLOOP_ASSIGN_OR_RETURN(manifest.normalization, ReadNormalization(registration.normalization_file, task));
  manifest.action_chunk_horizon = options->value("chunk", 1);
  manifest.provenance = {Version(), GitSha(), HostName(), CurrentUser(), std::nullopt};
  return manifest;
}

}  // namespace roboloop::cli
