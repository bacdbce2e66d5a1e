// Neural policies in the rollout loop (issue 4, req 7; issue 7, req 1; issue 27): the one loader
// of policy files of any registered kind (registry/policy_kind.h), from a registry checkpoint or
// a local file. A torch-free sim::Policy over the file that keeps each episode's observation history
// and executes the predicted action chunks (full chunk, receding horizon or ACT's temporal
// ensembling). Every row's action depends only on its own episode, so rollouts do not depend on
// envs, threads or sharding when batch-invariant inference is on. A policy that sees cameras
// (docs/vision.md) gets each query row's current frames, in its own camera order.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "registry/checkpoint_manifest.h"
#include "registry/registry_client.h"
#include "sim/policy.h"
#include "sim/spec.h"

namespace roboloop::sim {

// How predicted action chunks of horizon H become env actions.
struct ChunkExecution {
  enum class Mode {
    kFullChunk,         // query every H steps, execute the whole chunk
    kRecedingHorizon,   // query every `receding_steps` (<= H) steps, execute that many actions
    kTemporalEnsemble,  // query every step, average all predictions for the step
  };
  Mode mode = Mode::kFullChunk;       // which scheme
  int receding_steps = 1;             // kRecedingHorizon: actions executed per query (>= 1)
  double ensemble_coefficient = 0.0;  // kTemporalEnsemble: weight exp(-m * i), i = 0 oldest; >= 0
};

// Parses "full_chunk", "receding_horizon:N" (N >= 1) or "temporal_ensembling:m" (m >= 0).
// InvalidArgument quoting `text` otherwise.
absl::StatusOr<ChunkExecution> ParseChunkExecution(const std::string& text);

// The text form ParseChunkExecution reads.
std::string ChunkExecutionName(const ChunkExecution& execution);

// The facts of a checkpoint manifest (or a policy file) a rollout needs.
struct CheckpointPolicySpec {
  std::string kind;                // a registered policy kind
  nlohmann::json options;          // policy.options with the kind's defaults filled in
  nlohmann::json normalization;    // manifest normalization (train/normalization.h JSON)
  int obs_dim = 0;                 // floats of one observation row
  int action_dim = 0;              // floats of one action
  int history = 1;                 // observations the model reads
  int chunk = 1;                   // actions the model predicts per query (H)
  // The images the model reads, in its order: options.cameras ({name, width, height}; `camera`
  // stays ""); empty for a state-only policy.
  std::vector<CameraSpec> cameras;
  std::string policy_sha256;       // digest of the `policy` blob ("" for a local file)
  std::string blob_suffix;         // file suffix of the kind's weights
};

// Checks `manifest` (CheckpointManifest::FromJson) against the task's specs before anything
// runs: the obs_spec names and shapes, in order, must equal the task's keys, and the action_spec
// must hold the task's action dimension; the policy's options (completed with its kind's
// defaults) must agree with both where the kind has obs_dim/action_dim options. Each camera of
// obs_spec.cameras must be a camera of the task with the same width and height (the task may
// have more), and they must be the cameras of the options (same names, sizes and order).
// InvalidArgument naming `checkpoint` and the first difference (a camera by name, with the
// task's observation), or the manifest field at fault.
absl::StatusOr<CheckpointPolicySpec> CheckManifestFitsTask(const nlohmann::json& manifest,
                                                           const std::string& checkpoint,
                                                           const ObsSpec& obs_spec,
                                                           const ActionSpec& action_spec);

// A model predicting action chunks (the torch boundary's TorchPolicy::ActChunk, or a test's).
class ChunkModel {
 public:
  virtual ~ChunkModel() = default;
  // Shape of one query: `history` observations of `obs_dim` floats in, `chunk` actions of
  // `action_dim` floats out.
  virtual int history() const = 0;
  virtual int chunk() const = 0;
  virtual int obs_dim() const = 0;
  virtual int action_dim() const = 0;
  // The camera images it reads, in its order (empty: state only).
  virtual const std::vector<CameraSpec>& cameras() const = 0;
  // Writes rows x chunk x action_dim raw actions from rows x history x obs_dim raw observations
  // (left-padded by repeating the episode's first observation) with `history_length` real
  // steps per row and, with cameras, `images`: rows x (cameras' bytes), each row the frames of
  // its current observation in cameras() order (null without cameras). Each row's output must
  // depend only on that row.
  virtual absl::Status Predict(const float* obs, const int32_t* history_length, const uint8_t* images,
                               int rows, float* actions) = 0;
};

// A Policy over `model` that keeps per-episode state keyed by episode index: the last
// history() observations (history_length = min(step + 1, history)) and the chunks predicted so
// far, executed as `execution` says. Act fails (FailedPrecondition naming the episode) when an
// episode's steps do not follow each other; episodes absent from a batch are forgotten. `name`,
// `obs_spec` and `action_spec` are what the policy reports. Each query passes the model the
// frames of its cameras, gathered from PolicyBatch::images (the task's camera layout) into the
// model's order; Act fails (InvalidArgument) on a batch without images for a model with
// cameras. InvalidArgument when the model's dims differ from the specs, a model camera is not a
// task camera of the same size (naming it), or the execution does not fit the horizon.
absl::StatusOr<std::unique_ptr<Policy>> MakeChunkedPolicy(std::unique_ptr<ChunkModel> model,
                                                          const ChunkExecution& execution,
                                                          const std::string& name,
                                                          const ObsSpec& obs_spec,
                                                          const ActionSpec& action_spec);

// Where and how a checkpoint policy is loaded.
struct CheckpointPolicyOptions {
  std::string cache_dir;          // verified local copies of policy blobs (<sha256><kind's suffix>)
  ChunkExecution execution;       // chunk execution (receding_steps must be <= the horizon)
  bool batch_invariant = true;    // each row's action independent of its batch (docs/architecture.md §5)
};

// How a loaded policy runs.
struct PolicyRunOptions {
  ChunkExecution execution;       // chunk execution (receding_steps must be <= the horizon)
  bool batch_invariant = true;    // each row's action independent of its batch (docs/architecture.md §5)
};

// A policy file outside the registry.
struct PolicyFile {
  std::string path;                                        // the weights (a kind's blob)
  registry::PolicySection policy;                          // kind and options, as in a manifest
  nlohmann::json normalization = nlohmann::json::object(); // as in a manifest; {} = none
};

// Loads `file` through the torch boundary and checks that it fits the task: its options as
// CheckManifestFitsTask checks them (a kind without obs_dim/action_dim options takes the task's),
// then one query on a zero observation. The policy's name is file.path. InvalidArgument naming
// the file: an unknown kind or bad options, absent or corrupt, an op LibTorch lacks, "does not
// fit the task", a non-finite action for that observation; or the torch library that cannot be
// loaded.
absl::StatusOr<std::unique_ptr<Policy>> LoadPolicyFile(const PolicyFile& file, const PolicyRunOptions& options,
                                                       const ObsSpec& obs_spec, const ActionSpec& action_spec);

// Resolves `ref` in the registry, checks its manifest against the task (CheckManifestFitsTask),
// downloads the policy blob into options.cache_dir (reusing a verified copy) and loads it as
// LoadPolicyFile does. The policy's name is the checkpoint id. Errors name `ref`: unknown,
// specs that do not fit, an execution the horizon cannot serve, a blob that fails to download
// or load.
absl::StatusOr<std::unique_ptr<Policy>> LoadCheckpointPolicy(registry::RegistryClient& registry,
                                                             const std::string& ref,
                                                             const CheckpointPolicyOptions& options,
                                                             const ObsSpec& obs_spec,
                                                             const ActionSpec& action_spec);

// Versions of the inference libraries checkpoint policies run on, loading the torch library
// if needed: {"libtorch": version, "blas": the BLAS library mapped into the process}, or
// {"libtorch": "unavailable: <why>"} when the torch library cannot be loaded.
std::map<std::string, std::string> InferenceLibraries();

}  // namespace roboloop::sim
