// Checkpoints and datasets of a training run in the registry (issue 6, req 6 and 9):
// resolving the dataset, reading a checkpoint's manifest and blobs, and registering new
// checkpoints with the manifest of docs/architecture.md §2. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "data/validation_in_child.h"
#include "registry/checkpoint_manifest.h"
#include "registry/registry_client.h"

namespace roboloop::train {

// A dataset ready to load.
struct ResolvedDataset {
  std::string path;  // local HDF5 file
  std::string id;    // sha256 of its content (the registry's dataset id)
  std::string name;  // its registry name (a file not registered: its file name's stem)
};

// Uploads the HDF5 file at `path` and registers it as a dataset named after its file name's stem
// (lower-cased, other characters as '-'), its path recorded as metadata `source_path`.
absl::Status RegisterDatasetFile(registry::RegistryClient& registry, const std::string& path);

// The HDF5 file at `path` (which must exist) with its content's id; its registry name when it
// is registered. The file is first passed to `screen` (when set). With `register_file` a file
// not yet in the registry is then registered under its file name's stem, so that
// checkpoints can name it as their dataset. Errors name the path.
absl::StatusOr<ResolvedDataset> ResolveDatasetFile(registry::RegistryClient& registry, const std::string& path,
                                                   bool register_file, const data::FileScreen& screen = nullptr);

// The registry dataset `ref` (name, name:vN or id), downloaded once into `cache_dir` (verified)
// and then passed to `screen` (when set: a client may have uploaded any file as a dataset).
// Never looks for a file named `ref`. Errors name the reference.
absl::StatusOr<ResolvedDataset> ResolveRegistryDataset(registry::RegistryClient& registry, const std::string& ref,
                                                       const std::string& cache_dir,
                                                       const data::FileScreen& screen = nullptr);

// A checkpoint fetched for resuming or fine-tuning.
struct FetchedCheckpoint {
  std::string id;                 // checkpoint id
  registry::CheckpointManifest manifest;  // its manifest
  std::string policy_path;        // local copy of the `policy` blob
  std::string trainer_state_path; // local copy of `trainer_state` ("" when absent)
};

// Resolves `ref` and downloads its blobs into `cache_dir`, verified against their digests.
// Errors name the reference: unknown, a corrupt manifest, a policy kind that is not trainable
// (registry/policy_kind.h), a blob missing or whose content does not match its hash.
absl::StatusOr<FetchedCheckpoint> FetchCheckpoint(registry::RegistryClient& registry,
                                                  const std::string& ref,
                                                  const std::string& cache_dir);

// What a new checkpoint's manifest records.
struct CheckpointRecord {
  std::string model;                    // registry model name
  nlohmann::json policy_options;        // complete options of the policy (with "kind")
  std::vector<std::string> obs_features;  // obs/<key> features, in row order
  std::vector<std::vector<int64_t>> obs_shapes;  // per-step shape of each
  std::vector<registry::ManifestCamera> cameras;  // camera images, in the policy's order (none: state only)
  int64_t action_dim = 0;               // floats of one action
  nlohmann::json normalization;         // train/normalization.h JSON
  std::string dataset_id;               // dataset trained on
  std::string parent_id;                // previous checkpoint of the lineage ("" = none)
  int64_t step = 0;                     // steps taken
  nlohmann::json metrics;               // {name: number}
  std::string run_id;                   // training run
  std::string config_json;              // the run's TrainConfig as JSON
  std::string libtorch_version;         // provenance
};

// Uploads `policy_path` and `trainer_state_path` and registers the checkpoint. Returns the
// registered checkpoint (id, version).
absl::StatusOr<v1::Checkpoint> RegisterCheckpoint(registry::RegistryClient& registry,
                                                  const CheckpointRecord& record,
                                                  const std::string& policy_path,
                                                  const std::string& trainer_state_path);

}  // namespace roboloop::train
