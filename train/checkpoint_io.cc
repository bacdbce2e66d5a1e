// Registry side of training runs.
#include "train/checkpoint_io.h"

#include <cctype>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

registry::BlobDigest Digest(const v1::BlobInfo& blob) { return {blob.sha256(), blob.size()}; }

// The manifest of a new checkpoint with the uploaded `policy` and `trainer_state` blobs.
absl::StatusOr<registry::CheckpointManifest> ManifestOf(const CheckpointRecord& record, const v1::BlobInfo& policy,
                                                        const v1::BlobInfo& state) {
  registry::CheckpointManifest manifest;
  manifest.model = record.model;
  manifest.policy.kind = record.policy_options.value("kind", std::string());
  manifest.policy.options = record.policy_options;
  ROBOLOOP_ASSIGN_OR_RETURN(const nlohmann::json options, manifest.CompleteOptions());
  for (const std::string& feature : record.obs_features) {
    manifest.obs_spec.names.push_back(feature.rfind("obs/", 0) == 0 ? feature.substr(4) : feature);
  }
  manifest.obs_spec.shapes = record.obs_shapes;
  manifest.obs_spec.cameras = record.cameras;
  manifest.action_spec.names = {"action"};
  manifest.action_spec.shapes = {{record.action_dim}};
  manifest.normalization = record.normalization;
  manifest.action_chunk_horizon = options.value("chunk", 1);
  manifest.dataset_id = record.dataset_id;
  manifest.parent_id = record.parent_id;
  manifest.step = record.step;
  manifest.metrics = record.metrics;
  manifest.blobs = {{registry::kPolicyBlobRole, Digest(policy)}, {"trainer_state", Digest(state)}};
  manifest.provenance = {Version(), GitSha(), HostName(), CurrentUser(),
                         std::map<std::string, std::string>{{"libtorch", record.libtorch_version}}};
  return manifest;
}

}  // namespace

absl::Status RegisterDatasetFile(registry::RegistryClient& registry, const std::string& path) {
  ROBOLOOP_ASSIGN_OR_RETURN(v1::BlobInfo blob, registry.UploadFile(path));
  v1::RegisterDatasetRequest request;
  request.set_name(NameFromPath(path));
  request.set_blob_sha256(blob.sha256());
  request.set_metadata_json(nlohmann::json{{"source_path", path}}.dump());
  return registry.RegisterDataset(request).status();
}

absl::StatusOr<ResolvedDataset> ResolveDatasetFile(registry::RegistryClient& registry, const std::string& path,
                                                   bool register_file, const data::FileScreen& screen) {
  if (!PathExists(path)) return absl::NotFoundError(absl::StrCat("dataset file ", path, " does not exist"));
  if (screen) ROBOLOOP_RETURN_IF_ERROR(screen(path));
  ROBOLOOP_ASSIGN_OR_RETURN(std::string id, Sha256File(path));
  absl::StatusOr<v1::Dataset> registered = registry.GetDataset(id);
  if (register_file && !registered.ok()) {
    ROBOLOOP_RETURN_IF_ERROR(RegisterDatasetFile(registry, path));
  }
  return ResolvedDataset{path, id, registered.ok() ? registered->name() : NameFromPath(path)};
}

absl::StatusOr<ResolvedDataset> ResolveRegistryDataset(registry::RegistryClient& registry, const std::string& ref,
                                                       const std::string& cache_dir, const data::FileScreen& screen) {
  absl::StatusOr<v1::Dataset> dataset = registry.GetDataset(ref);
  if (!dataset.ok()) return Annotate(dataset.status(), absl::StrCat("dataset ", ref));
  ROBOLOOP_ASSIGN_OR_RETURN(std::string path,
                            registry.CachedCopy(dataset->blob().sha256(), cache_dir, ".hdf5"));
  if (screen) {
    ROBOLOOP_RETURN_IF_ERROR(Annotate(screen(path), absl::StrCat("dataset ", ref)));
  }
  return ResolvedDataset{path, dataset->id(), dataset->name()};
}

absl::StatusOr<FetchedCheckpoint> FetchCheckpoint(registry::RegistryClient& registry,
                                                  const std::string& ref,
                                                  const std::string& cache_dir) {
  absl::StatusOr<v1::Checkpoint> checkpoint = registry.GetCheckpoint(ref);
  if (!checkpoint.ok()) return Annotate(checkpoint.status(), absl::StrCat("checkpoint ", ref));
  FetchedCheckpoint fetched;
  fetched.id = checkpoint->id();
  absl::StatusOr<registry::CheckpointManifest> manifest =
      registry::CheckpointManifest::Parse(checkpoint->manifest_json());
  if (!manifest.ok()) return Annotate(manifest.status(), absl::StrCat("checkpoint ", ref));
  fetched.manifest = *std::move(manifest);
  ROBOLOOP_ASSIGN_OR_RETURN(const registry::PolicyKind* kind, fetched.manifest.Kind());
  if (!kind->trainable) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint ", ref, " holds a '", kind->name,
                                                   "' policy; training continues ",
                                                   absl::StrJoin(registry::TrainablePolicyKindNames(), " or "),
                                                   " policies"));
  }
  for (const v1::BlobRef& blob : checkpoint->blobs()) {
    const std::string suffix = blob.role() == registry::kPolicyBlobRole ? kind->blob_suffix : ".state";
    absl::StatusOr<std::string> path = registry.CachedCopy(blob.sha256(), cache_dir, suffix);
    if (!path.ok()) {
      return Annotate(path.status(), absl::StrCat("checkpoint ", ref, " blob ", blob.role()));
    }
    if (blob.role() == registry::kPolicyBlobRole) fetched.policy_path = *path;
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
  ROBOLOOP_ASSIGN_OR_RETURN(const registry::CheckpointManifest manifest, ManifestOf(record, policy, state));
  v1::RegisterCheckpointRequest request;
  request.set_model(record.model);
  request.set_manifest_json(manifest.ToJson().dump());
  request.set_run_id(record.run_id);
  request.set_config_json(record.config_json);
  return registry.RegisterCheckpoint(request);
}

}  // namespace roboloop::train
