// The env pool and rollout engine (issue 4, reqs 5 and 6): N envs stepped by K threads;
// per env step the policy runs once for the whole batch of running envs, then the workers
// step physics in parallel. Optionally (overlap_inference, more than one thread) the envs form
// two halves that take turns: while the workers step one half, the caller's thread runs the
// policy on the other, so inference overlaps physics. Finished envs auto-reset to the next
// episode or drop out. Episode i is determined by (task, options, base seed, i, policy) only,
// for any envs, threads or overlap. For a task with cameras, each thread owns a camera
// renderer (its own GL context, created on first use) and renders the envs it reset or stepped
// into the engine's per-slot image rows, which the policy receives (PolicyBatch::images) and
// trajectories record (Trajectory::images); tasks without cameras load no GL at all.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/cancellation.h"
#include "absl/status/statusor.h"
#include "sim/camera_renderer.h"
#include "sim/env.h"
#include "sim/policy.h"
#include "sim/task.h"
#include "sim/worker_pool.h"

namespace roboloop::sim {

// The outcome of one episode (docs/architecture.md §2).
struct EpisodeRecord {
  std::string task;                // task name
  uint64_t seed = 0;               // EpisodeSeed(base seed, episode index)
  int64_t episode_index = 0;       // index within the rollout's seed range
  double episode_return = 0.0;     // sum of rewards
  int length = 0;                  // env steps taken
  bool success = false;            // the task's success rule
  EndReason end_reason = EndReason::kNone;  // why it ended
  std::string end_detail;          // detail of invalid_action / unstable ends
  double wall_time_s = 0.0;        // seconds from reset to end (not deterministic)
  uint64_t state_hash_chain = 0;   // chain over the reset state and every step's state
  uint64_t final_state_hash = 0;   // hash of the last state

  // True when every deterministic field equals `other`'s (all but wall_time_s).
  bool SameOutcome(const EpisodeRecord& other) const;
};

// Receives finished episodes, on the thread that called RolloutEngine::Run, in completion
// order. The data writer (Collect) and the SimService stream implement it.
class EpisodeSink {
 public:
  virtual ~EpisodeSink() = default;
  // Called once per finished episode; `trajectory` is null unless recording is on. An
  // error stops the rollout and is returned by Run.
  virtual absl::Status OnEpisode(const EpisodeRecord& record, const Trajectory* trajectory) = 0;
};

// Options of one rollout.
struct RolloutOptions {
  uint64_t base_seed = 0;          // episode i uses EpisodeSeed(base_seed, i)
  int64_t first_episode = 0;       // first episode index of the seed range
  int64_t num_episodes = 1;        // episodes to run: [first_episode, first + num)
  int num_envs = 1;                // envs stepped together (batch size of the policy)
  int num_threads = 1;             // threads stepping physics (including the caller's)
  bool overlap_inference = false;  // with num_threads > 1: run the policy on one half of the
                                   // envs while the workers step the other half (two calls
                                   // per env step instead of one for the whole batch)
  int max_steps = 0;               // horizon override; 0 = the task's
  bool record_trajectories = false;  // pass each episode's Trajectory to the sink
  RobustnessOptions robustness;    // perturbations of every env
  const common::CancellationToken* cancel = nullptr;  // once cancelled, Run stops (Cancelled)
};

// Runs rollouts of one task. Not thread-safe: one Run at a time. Reusable for several Runs
// with the same options (buffers are allocated once, in Create).
class RolloutEngine {
 public:
  // Validates `options` and builds the envs and workers for `task` (which must outlive
  // the engine).
  static absl::StatusOr<std::unique_ptr<RolloutEngine>> Create(const Task* task,
                                                               const RolloutOptions& options);

  // Stops the workers first: each frees its renderer on its own thread.
  ~RolloutEngine();

  // Runs all episodes of the options' seed range with `policy` and passes each to `sink`.
  // A policy whose specs do not match the task is refused before any stepping; a task reward
  // that is NaN or infinite stops the rollout with FailedPrecondition naming the task, the
  // episode and the step (that episode never reaches the sink).
  absl::Status Run(Policy& policy, EpisodeSink& sink);

 private:
  // The envs one policy call sees: a fixed subset of the slots and its batch buffers.
  struct EnvGroup {
    std::vector<int> active;              // slots with a running episode, in slot order
    std::vector<float> batch_obs;         // active x obs_size, the policy's input
    std::vector<float> batch_privileged;  // active x privileged size, for scripted experts
    std::vector<uint8_t> batch_images;    // active x image_bytes, the policy's image input
    std::vector<float> batch_actions;     // active x action_size, the policy's output
    std::vector<int64_t> batch_episode;
    std::vector<int32_t> batch_step;
  };

  // Steps one row of `group` on pool thread `thread` (the pool's loop body).
  struct StepRow {
    RolloutEngine* engine;
    const EnvGroup* group;
    void operator()(int row, int thread) const;
  };

  RolloutEngine(const Task* task, const RolloutOptions& options,
                std::vector<std::unique_ptr<Env>> envs, std::unique_ptr<WorkerPool> pool);
  // Resets `slot` to `episode_index` and renders it on pool thread `thread`.
  absl::Status StartEpisode(int slot, int64_t episode_index, int thread);
  // Renders the cameras of slot `slot` into its image row with pool thread `thread`'s
  // renderer (created on first use); an error is kept for TakeRenderError. Nothing without cameras.
  void RenderSlot(int slot, int thread);
  // The first render error since the last call (OK when none), cleared.
  absl::Status TakeRenderError();
  absl::Status StartInitialEpisodes();
  absl::Status Act(Policy& policy, EnvGroup& group, const std::string& who);
  // Starts stepping the group's envs on the pool; pool_->Finish() completes it.
  void StartStep(EnvGroup& group);
  // FailedPrecondition naming the task, the episode and the step when `env`'s episode ended on
  // a non-finite reward or observation, or on the task's error (EndReason::kTaskError): nothing
  // downstream may store it; OK otherwise.
  absl::Status RefuseInvalidTaskOutput(const Env& env) const;
  // Passes the group's finished episodes to the policy and the sink and restarts their slots;
  // stops at an episode that ended on a non-finite reward or observation or a task error
  // (RefuseInvalidTaskOutput).
  absl::Status CollectFinished(EnvGroup& group, Policy& policy, EpisodeSink& sink);
  absl::Status RunSerial(Policy& policy, EpisodeSink& sink, const std::string& who);
  absl::Status RunOverlapped(Policy& policy, EpisodeSink& sink, const std::string& who);
  EpisodeRecord MakeRecord(const Env& env) const;
  bool Cancelled() const;

  const Task* task_;
  RolloutOptions options_;
  std::vector<std::unique_ptr<Env>> envs_;
  std::unique_ptr<WorkerPool> pool_;
  int obs_size_;
  int privileged_size_;
  int action_size_;
  int image_bytes_;                    // bytes of one slot's frames; 0 without cameras
  int64_t next_episode_ = 0;
  std::vector<float> slot_obs_;        // num_envs x obs_size: each slot's current obs
  std::vector<uint8_t> slot_images_;   // num_envs x image_bytes: each slot's current frames
  // Per pool thread: its renderer and its first render error (each touched by its thread only).
  std::vector<std::unique_ptr<CameraRenderer>> renderers_;
  std::vector<absl::Status> render_errors_;
  std::vector<EnvGroup> groups_;       // one group, or two halves when overlapping
  StepRow step_row_{this, nullptr};    // the loop StartStep launched
};

// Runs a rollout and returns its records sorted by episode index.
absl::StatusOr<std::vector<EpisodeRecord>> RunRollout(const Task& task, Policy& policy,
                                                      const RolloutOptions& options);

}  // namespace roboloop::sim
