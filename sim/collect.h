// Collect and Relabel (issue 4, req 8): demonstrations from a policy written as a robomimic
// dataset through data::DatasetWriter, and DAgger relabelling of a dataset's recorded states
// with a task's expert.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/array.h"
#include "data/storage_options.h"
#include "sim/policy.h"
#include "sim/rollout.h"
#include "sim/task.h"

namespace roboloop::sim {

// Options of one collection.
struct CollectOptions {
  std::string output_path;        // dataset file to write
  bool overwrite = false;         // replace an existing file at output_path
  RolloutOptions rollout;         // seed range, envs, threads, horizon, robustness
  std::string policy_reference;   // how the policy was asked for ("expert", "random"), for env_args
  uint64_t policy_seed = 0;       // seed of the random policy, for env_args
  bool success_only = false;      // write only episodes that succeeded
  bool failures_only = false;     // write only episodes that did not succeed
  data::StorageOptions storage;   // chunking and compression
};

// What a collection or relabelling wrote.
struct DatasetSummary {
  std::string path;              // the file written
  std::string sha256;            // lowercase hex sha256 of its bytes
  int64_t episodes_run = 0;      // episodes simulated (or demos read, for Relabel)
  int64_t episodes_written = 0;  // demos in the file
  int64_t successes = 0;         // successful episodes among those run (Collect only)
  int64_t total_steps = 0;       // steps in the file
};

// Runs `policy` on `task` over the seed range of `options.rollout` (trajectories on) and
// writes demo_<k> = the k-th written episode in episode-index order, with `obs/<key>` for each
// obs-spec key (float32), `obs/<camera>_image` for each camera (uint8 [T, H, W, 3], the frames
// seen before each action, docs/vision.md), `actions` (float32, as applied), `rewards` (float32), `dones`
// (uint8) and `states` (float64, sim/physics_state.h layout, before each action). env_args
// names the task, the policy, the robustness options, horizon and seed range
// (CollectEnvArgs); the lineage operation is "collect". The file's bytes depend only on the
// task, options (not envs or threads) and policy. Fails, leaving no file, when an episode
// cannot be written or no episode qualifies.
absl::StatusOr<DatasetSummary> CollectDataset(const Task& task, Policy& policy,
                                              const CollectOptions& options);

// The env_args object of a collection: {"env_name", "type": "roboloop", "env_kwargs": {task,
// policy, policy_seed, base_seed, first_episode, num_episodes, max_steps, success_only,
// robustness, state_size}}.
std::string CollectEnvArgs(const Task& task, const CollectOptions& options);

// Adds `obs/<camera>_image` (uint8 [steps, H, W, 3]) for each camera of `spec` to `episode`,
// cut from `images`: `steps` image rows of spec.image_bytes() bytes (Trajectory::images).
void AddCameraFrames(const ObsSpec& spec, const std::vector<uint8_t>& images, int64_t steps, data::Episode* episode);

// Options of one relabelling.
struct RelabelOptions {
  std::string input_path;        // dataset with `states` (e.g. from CollectDataset)
  std::string output_path;       // dataset to write
  bool overwrite = false;        // replace an existing file at output_path
  data::StorageOptions storage;  // chunking and compression
};

// The task named by a dataset's env_args ("env_name"), or InvalidArgument naming the file.
absl::StatusOr<std::string> DatasetTaskName(const std::string& path);

// Restores each step's `states` row into an mjData of `task`'s (nominal) model, observes it
// without noise (a task with cameras also renders them: the expert sees the frames) and asks
// `expert` for the action; writes a dataset with every feature of the input copied except
// `actions`, which holds the expert's (episode index = demo index, step = row), and, for a
// task with cameras, `obs/<camera>_image`, the frames rendered from the states. Masks are carried over; env_args gains "relabelled_by": the expert's name; the lineage
// is "relabel" with the input as its one parent (kind "dataset", path, sha256). Errors name
// the input: states missing or of the wrong width for the task, a MuJoCo error on restore.
absl::StatusOr<DatasetSummary> RelabelDataset(const Task& task, Policy& expert,
                                              const RelabelOptions& options);

}  // namespace roboloop::sim
