// Registry side of training runs.
#include "train/checkpoint_io.h"

#include <cctype>

#include "absl/strings/str_cat.h"
#include "common/fs.h"
#include "common/ids.h"
#include "common/sha256.h"
#include "common/status.h"
#include "common/version.h"

namespace roboloop::train {
namespace {

// A dataset name from a file name: its stem, lower-cased, other characters as '-'.
std::string NameFromPath(const std::string& path) {
  std::string stem = path.substr(path.find_last_of('/') + 1);
  stem = stem.substr(0, stem.find('.'));
  std::string name;
  for (char c : stem) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
    name += keep ? static_cast<char>(std::tolower(static_cast<unsigned char>(c))) : '-';
  }
  return name.empty() || !std::isalnum(static_cast<unsigned char>(name[0])) ? "dataset-" + name : name;
}

absl::Status RegisterFile(registry::RegistryClient& registry, const std::string& path) {
  ROBOLOOP_ASSIGN_OR_RETURN(v1::BlobInfo blob, registry.UploadFile(path));
  v1::RegisterDatasetRequest request;
  request.set_name(NameFromPath(path));
  request.set_blob_sha256(blob.sha256());
  request.set_metadata_json(nlohmann::json{{"source_path", path}}.dump());
  return registry.RegisterDataset(request).status();
}

nlohmann::json SpecJson(const std::vector<std::string>& names,
                        const std::vector<std::vector<int64_t>>& shapes) {
  return {{"names", names}, {"shapes", shapes}};
}

}  // namespace

absl::StatusOr<ResolvedDataset> ResolveDataset(registry::RegistryClient& registry,
                                               const std::string& ref,
                                               const std::string& cache_dir, bool register_file) {
  if (ref.empty()) return absl::InvalidArgumentError("training needs a dataset (path or reference)");
  if (PathExists(ref)) {
    ROBOLOOP_ASSIGN_OR_RETURN(std::string id, Sha256File(ref));
    if (register_file && !registry.GetDataset(id).ok()) {
      ROBOLOOP_RETURN_IF_ERROR(RegisterFile(registry, ref));
    }
    return ResolvedDataset{ref, id};
  }
  absl::StatusOr<v1::Dataset> dataset = registry.GetDataset(ref);
  if (!dataset.ok()) {
    return Annotate(dataset.status(), absl::StrCat("dataset ", ref, " (neither a file nor a registry dataset)"));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(std::string path,
                            registry.CachedCopy(dataset->blob().sha256(), cache_dir, ".hdf5"));
  return ResolvedDataset{path, dataset->id()};
}

absl::StatusOr<FetchedCheckpoint> FetchCheckpoint(registry::RegistryClient& registry,
                                                  const std::string& ref,
                                                  const std::string& cache_dir) {
  absl::StatusOr<v1::Checkpoint> checkpoint = registry.GetCheckpoint(ref);
  if (!checkpoint.ok()) return Annotate(checkpoint.status(), absl::StrCat("checkpoint ", ref));
  FetchedCheckpoint fetched;
  fetched.id = checkpoint->id();
  fetched.manifest = nlohmann::json::parse(checkpoint->manifest_json(), nullptr, false);
  const std::string kind = fetched.manifest.value("/policy/kind"_json_pointer, std::string());
  if (kind != "mlp" && kind != "transformer") {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint ", ref, " holds a '", kind,
                                                   "' policy; training continues mlp or transformer policies"));
  }
  for (const v1::BlobRef& blob : checkpoint->blobs()) {
    const std::string suffix = blob.role() == "policy" ? ".safetensors" : ".state";
    absl::StatusOr<std::string> path = registry.CachedCopy(blob.sha256(), cache_dir, suffix);
    if (!path.ok()) {
      return Annotate(path.status(), absl::StrCat("checkpoint ", ref, " blob ", blob.role()));
    }
    if (blob.role() == "policy") fetched.policy_path = *path;
    if (blob.role() == "trainer_state") fetched.trainer_state_path = *path;
  }
  if (fetched.policy_path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint ", ref, " has no policy blob"));
  }
  return fetched;
}

absl::StatusOr<v1::Checkpoint> RegisterCheckpoint(registry::RegistryClient& registry,
                                                  const CheckpointRecord& record,
                                                  const std::string& policy_path,
                                                  const std::string& trainer_state_path) {
  ROBOLOOP_ASSIGN_OR_RETURN(v1::BlobInfo policy, registry.UploadFile(policy_path));
  ROBOLOOP_ASSIGN_OR_RETURN(v1::BlobInfo state, registry.UploadFile(trainer_state_path));
  std::vector<std::string> obs_names;
  for (const std::string& feature : record.obs_features) {
    obs_names.push_back(feature.rfind("obs/", 0) == 0 ? feature.substr(4) : feature);
  }
  nlohmann::json manifest = {
      {"format_version", 1},
      {"model", record.model},
      {"policy", {{"kind", record.policy_options["kind"]}, {"options", record.policy_options}}},
      {"obs_spec", SpecJson(obs_names, record.obs_shapes)},
      {"action_spec", SpecJson({"action"}, {{record.action_dim}})},
      {"normalization", record.normalization},
      {"action_chunk", {{"horizon", record.policy_options.value("chunk", 1)}, {"execution", "receding_horizon"}}},
      {"dataset_id", record.dataset_id},
      {"parent_id", record.parent_id},
      {"step", record.step},
      {"metrics", record.metrics},
      {"blobs",
       {{"policy", {{"sha256", policy.sha256()}, {"size", policy.size()}}},
        {"trainer_state", {{"sha256", state.sha256()}, {"size", state.size()}}}}},
      {"provenance",
       {{"roboloop_version", Version()},
        {"git_sha", GitSha()},
        {"host", HostName()},
        {"user", CurrentUser()},
        {"libraries", {{"libtorch", record.libtorch_version}}}}},
  };
  v1::RegisterCheckpointRequest request;
  request.set_model(record.model);
  request.set_manifest_json(manifest.dump());
  request.set_run_id(record.run_id);
  request.set_config_json(record.config_json);
  return registry.RegisterCheckpoint(request);
}

}  // namespace roboloop::train
