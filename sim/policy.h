// The torch-free policy interface of the rollout engine: scripted experts, random policies
// and (through the torch boundary, later) neural policies all implement it.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "sim/spec.h"

namespace roboloop::sim {

// One batched policy call: `batch` observation rows of the task's ObsSpec layout.
struct PolicyBatch {
  const float* obs = nullptr;               // batch x obs_size floats, row-major
  const int64_t* episode_index = nullptr;   // per row: the episode the row belongs to
  const int32_t* step = nullptr;            // per row: steps already taken in that episode
  int batch = 0;                            // number of rows
  const uint8_t* images = nullptr;          // batch x image_bytes: each row the spec's camera
                                            // frames back to back; null without cameras
  const float* privileged = nullptr;        // batch x the task's privileged_spec() size:
                                            // state only scripted experts read; null when
                                            // the task has none
};

// Maps a batch of observations to a batch of actions. Each output row must depend only on
// its own row's inputs (obs, episode index, step), so that results do not depend on how
// episodes are batched (docs/architecture.md §5). The engine calls Act from one thread at a time.
class Policy {
 public:
  virtual ~Policy() = default;

  // A short human-readable name ("cartpole-swingup-expert", "random", a checkpoint id).
  virtual std::string name() const = 0;
  // The observation layout the policy reads; checked against the task before stepping.
  virtual const ObsSpec& obs_spec() const = 0;
  // The action layout the policy writes; checked against the task before stepping.
  virtual const ActionSpec& action_spec() const = 0;
  // Writes batch.batch x action_spec().size() floats into `actions`. An error stops the
  // rollout (it is a bug or an unusable policy, not a property of one episode).
  virtual absl::Status Act(const PolicyBatch& batch, float* actions) = 0;
  // Called once an episode has ended, after its last Act row; a policy that keeps state per
  // episode frees it here. Batches may hold any subset of the running episodes, so the end
  // of an episode cannot be told from its absence in a batch. The default does nothing.
  virtual void EndEpisode(int64_t /*episode_index*/) {}
};

}  // namespace roboloop::sim
