// One simulated environment: a task, its own mjData (and a model copy only when the
// robustness options randomise model parameters), the episode's RNG streams, success
// tracking, a hash chain over per-step states and an optional trajectory recording.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/mujoco_guard.h"
#include "sim/robustness.h"
#include "sim/rng.h"
#include "sim/task.h"

namespace roboloop::sim {

// Why an episode ended.
enum class EndReason {
  kNone,           // still running
  kTruncated,      // reached the horizon
  kTerminated,     // the task's termination condition held
  kInvalidAction,  // a NaN/Inf action or one of the wrong size
  kUnstable,       // physics diverged (MuJoCo warning counters, NaN state, MuJoCo error)
  kInvalidReward,  // the task's reward was NaN or infinite (a task bug; the rollout stops)
  kInvalidObservation,  // the task's observation held a NaN or infinity (a task bug; the rollout stops)
  kTaskError,           // the task's code failed (a plug-in wrote past its observation buffer; the rollout stops)
};

// "running", "truncated", "terminated", "invalid_action", "unstable", "invalid_reward",
// "invalid_observation", "task_error".
const char* EndReasonName(EndReason reason);

// Per-step arrays of one episode in robomimic order: entry t is what was seen and done at
// step t.
struct Trajectory {
  std::vector<float> obs;       // length x obs size: observation before action t
  std::vector<float> actions;   // length x action size: action t as applied (clipped)
  std::vector<float> rewards;   // length: reward of step t
  std::vector<uint8_t> dones;   // length: 1 on the episode's last step
  std::vector<double> states;   // length x PhysicsStateSize: full state before action t
  std::vector<uint8_t> images;  // length x image bytes: camera frames before action t (empty
                                // when the task has no cameras)
  std::vector<float> final_obs; // observation after the last step

  // Empties all arrays, keeping their capacity.
  void Clear();
};

// Options of one env.
struct EnvOptions {
  int max_steps = 0;                // horizon in env steps; 0 = the task's max_steps()
  RobustnessOptions robustness;     // perturbations, drawn from the episode seed
  bool record_trajectory = false;   // keep a Trajectory of each episode
};

// Not thread-safe: one thread at a time may call an Env; different Envs of one task may be
// stepped concurrently.
class Env {
 public:
  // Builds an env for `task` (which must outlive it). Validates the options.
  static absl::StatusOr<std::unique_ptr<Env>> Create(const Task* task, const EnvOptions& options);

  // Starts episode `episode_index` from `seed` and writes the reset observation to `obs`.
  // An error (a MuJoCo error while resetting) leaves the env without an episode.
  absl::Status Reset(uint64_t seed, int64_t episode_index, float* obs);

  // Applies `action` (`action_size` floats, clipped to the action bounds) for the task's
  // control substeps, then writes the next observation to `obs`. On entry `obs` must hold
  // the current observation, and `images` (null for tasks without cameras) the current
  // frames, ObsSpec::image_bytes() bytes; both are recorded when recording is on. Returns
  // kNone while the episode continues, else why it ended. Must not be called after the
  // episode ended.
  EndReason Step(const float* action, int action_size, float* obs, const uint8_t* images = nullptr);

  bool done() const { return end_ != EndReason::kNone; }
  EndReason end_reason() const { return end_; }
  // Human-readable detail of an abnormal end (the invalid value and its step, the MuJoCo
  // warning).
  const std::string& end_detail() const { return end_detail_; }
  int64_t episode_index() const { return episode_index_; }
  uint64_t seed() const { return seed_; }
  int length() const { return length_; }
  double episode_return() const { return return_; }
  // Episode success under the task's rule; meaningful once done().
  bool success() const;
  // Chain over the reset state and the state after every step.
  uint64_t state_hash_chain() const { return hash_chain_; }
  // Hash of the current full physics state.
  uint64_t current_state_hash() const;
  // Seconds since Reset until the end (or until now while running).
  double wall_time_s() const;
  int horizon() const { return horizon_; }
  const Trajectory& trajectory() const { return trajectory_; }
  const Task& task() const { return *task_; }
  // The model this env steps (the task's, or its randomised copy).
  const mjModel* model() const { return model_; }
  mjData* data() { return data_.get(); }

 private:
  struct NoiseSlice {
    int offset;
    int size;
    double std;
  };
  Env(const Task* task, const EnvOptions& options, ModelPtr own_model, DataPtr data);
  void RandomiseModel();
  void AddObservationNoise(float* obs);
  // The task's observation (plus noise) in `obs`, or the task's error (Task::ObserveOrError).
  absl::Status ObserveInto(float* obs);
  // False, with end_detail_ naming the key, the index and the step, when the task's observation
  // `obs` holds a NaN or infinity.
  bool ObservationFinite(const float* obs);
  bool PrepareAction(const float* action, int action_size);
  void RecordBeforeStep(const float* obs, const uint8_t* images);
  void Finish(EndReason reason, const float* obs);
  bool PhysicsDiverged();
  int InstabilityWarnings() const;

  const Task* task_;
  EnvOptions options_;
  ModelPtr own_model_;
  const mjModel* model_;
  DataPtr data_;
  int horizon_;
  std::vector<NoiseSlice> noise_slices_;
  std::vector<float> clipped_action_;
  std::vector<float> delay_line_;
  int delay_head_ = 0;
  Rng task_rng_{0};
  Rng noise_rng_{0};
  uint64_t seed_ = 0;
  int64_t episode_index_ = -1;
  int length_ = 0;
  double return_ = 0.0;
  bool condition_always_ = true;
  int condition_streak_ = 0;
  int longest_streak_ = 0;
  int warnings_at_reset_ = 0;
  uint64_t hash_chain_ = 0;
  EndReason end_ = EndReason::kNone;
  std::string end_detail_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point end_time_;
  Trajectory trajectory_;
};

}  // namespace roboloop::sim
