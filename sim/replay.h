// Replay (issue 4, req 6): re-runs one recorded episode and verifies it bit for bit.
#pragma once

#include "absl/status/status.h"
#include "sim/policy.h"
#include "sim/rollout.h"
#include "sim/task.h"

namespace roboloop::sim {

// Re-runs episode `expected.episode_index` of a rollout with `options` (base seed, horizon,
// robustness; its seed range, envs and threads are ignored: one env, one thread) and
// compares the new record with `expected`. OK when every deterministic field matches,
// including the state hash chain; DataLoss naming the first field that differs (with both
// values) otherwise; InvalidArgument when `expected` is for another task or its seed does
// not follow from the base seed (the replay options are not the recording's).
absl::Status ReplayEpisode(const Task& task, Policy& policy, const RolloutOptions& options,
                           const EpisodeRecord& expected);

}  // namespace roboloop::sim
