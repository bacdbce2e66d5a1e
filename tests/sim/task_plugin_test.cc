// Out-of-tree task plugins (issue 4, req 2b): the reference example is compiled here as its
// own shared library, against the public headers only, then loaded, rolled out and checked;
// a plugin for another ABI version, a missing file and a duplicate name are refused.
#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "sim/random_policy.h"
#include "sim/rollout.h"
#include "sim/task_plugin.h"

namespace roboloop::sim {
namespace {

// Compiles `source` (with `flags`) into a shared library in the test's temp dir against the
// public headers (ours and MuJoCo's) and returns its path.
std::string BuildPlugin(const std::string& source, const std::string& name,
                        const std::string& flags = "") {
  const std::string output = ::testing::TempDir() + "/lib" + name + ".so";
  const std::string command = "cc -shared -fPIC -O1 -I" ROBOLOOP_SOURCE_DIR
                              " -I" ROBOLOOP_MUJOCO_INCLUDE_DIR " " + flags + " " + source +
                              " -o " + output + " -lm";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  return output;
}

TEST(TaskPluginTest, LoadsTheExamplePluginAndRollsItOut) {
  const std::string plugin =
      BuildPlugin(ROBOLOOP_SOURCE_DIR "/sim/examples/task_plugin/slider_reach_plugin.c", "slider");
  TaskRegistry registry;
  ASSERT_TRUE(LoadTaskPlugin(plugin, &registry).ok());
  auto task = registry.Create("plugin-slider-reach");
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_EQ((*task)->obs_spec().size(), 3);
  EXPECT_EQ((*task)->action_spec().size(), 1);
  RandomPolicy policy(**task, 2);
  RolloutOptions options;
  options.num_episodes = 4;
  options.num_envs = 2;
  auto records = RunRollout(**task, policy, options);
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 4u);
  EXPECT_EQ((*records)[0].length, 100);
  EXPECT_NE((*records)[0].state_hash_chain, (*records)[1].state_hash_chain);
  EXPECT_EQ(LoadTaskPlugin(plugin, &registry).code(), absl::StatusCode::kAlreadyExists);
}

TEST(TaskPluginTest, RefusesAPluginBuiltForAnotherAbiVersion) {
  const std::string plugin = BuildPlugin(ROBOLOOP_SOURCE_DIR "/tests/sim/wrong_abi_plugin.c", "wrong");
  TaskRegistry registry;
  const absl::Status status = LoadTaskPlugin(plugin, &registry);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("ABI version 999"), std::string::npos) << status;
  EXPECT_NE(status.message().find(plugin), std::string::npos) << status;
  EXPECT_TRUE(registry.Names().empty());
}

TEST(TaskPluginTest, RefusesAVersionOnePluginBuiltForMujocoTwo) {
  const std::string plugin = BuildPlugin(ROBOLOOP_SOURCE_DIR "/tests/sim/wrong_abi_plugin.c",
                                         "version1", "-DCLAIMED_ABI_VERSION=1u");
  TaskRegistry registry;
  const absl::Status status = LoadTaskPlugin(plugin, &registry);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("ABI version 1, this roboloop supports version 2"),
            std::string::npos) << status;
  EXPECT_NE(status.message().find("rebuild the plugin against MuJoCo 3"), std::string::npos) << status;
  EXPECT_TRUE(registry.Names().empty());
}

TEST(TaskPluginTest, MissingLibraryIsAClearError) {
  TaskRegistry registry;
  const absl::Status status = LoadTaskPlugin("/nonexistent/libtask.so", &registry);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("/nonexistent/libtask.so"), std::string::npos);
}

TEST(TaskPluginTest, EnvironmentVariableListsPlugins) {
  const std::string plugin =
      BuildPlugin(ROBOLOOP_SOURCE_DIR "/sim/examples/task_plugin/slider_reach_plugin.c", "env");
  setenv("ROBOLOOP_TASK_PLUGINS", plugin.c_str(), 1);
  TaskRegistry registry;
  ASSERT_TRUE(LoadTaskPluginsFromEnvironment(&registry).ok());
  unsetenv("ROBOLOOP_TASK_PLUGINS");
  EXPECT_TRUE(registry.Contains("plugin-slider-reach"));
}

}  // namespace
}  // namespace roboloop::sim
