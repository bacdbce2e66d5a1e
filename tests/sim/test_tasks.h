// Helpers shared by the sim tests: build a built-in task and run one episode.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sim/builtin_tasks.h"
#include "sim/env.h"
#include "sim/rng.h"

namespace roboloop::sim::testing {

// The built-in task `name`, models from the source tree; fails the test on error.
inline std::unique_ptr<Task> BuiltinTask(const std::string& name) {
  TaskRegistry registry;
  BuiltinTaskOptions options;
  options.models_dir = ROBOLOOP_SOURCE_DIR "/configs/tasks/models";
  EXPECT_TRUE(RegisterBuiltins(&registry, options).ok());
  auto task = registry.Create(name);
  EXPECT_TRUE(task.ok()) << task.status();
  return task.ok() ? std::move(task).value() : nullptr;
}

// Runs episode `index` of base seed `base_seed` in `env` with `policy` to its end.
inline void RunEpisode(Env& env, Policy& policy, uint64_t base_seed, int64_t index) {
  const Task& task = env.task();
  std::vector<float> obs(task.obs_spec().size());
  std::vector<float> action(task.action_spec().size());
  std::vector<float> privileged(task.privileged_spec().size());
  ASSERT_TRUE(env.Reset(EpisodeSeed(base_seed, index), index, obs.data()).ok());
  while (!env.done()) {
    const int32_t step = env.length();
    PolicyBatch batch{obs.data(), &index, &step, 1};
    if (!privileged.empty()) {
      task.ObservePrivileged(env.model(), env.data(), privileged.data());
      batch.privileged = privileged.data();
    }
    ASSERT_TRUE(policy.Act(batch, action.data()).ok());
    env.Step(action.data(), static_cast<int>(action.size()), obs.data());
  }
}

}  // namespace roboloop::sim::testing
