// Out-of-tree task plugins (issue 4, req 2b): the reference example is compiled here as its
// own shared library, against the public headers only, then loaded, rolled out and checked;
// its camera is rendered; a plugin for another ABI version, a missing file and a duplicate name
// are refused.
#include <cstdlib>
#include <map>
#include <vector>
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

// Keeps each episode's record and recorded frames, by episode index.
class FrameSink : public EpisodeSink {
 public:
  absl::Status OnEpisode(const EpisodeRecord& record, const Trajectory* trajectory) override {
    records[record.episode_index] = record;
    frames[record.episode_index] = trajectory->images;
    return absl::OkStatus();
  }
  std::map<int64_t, EpisodeRecord> records;
  std::map<int64_t, std::vector<uint8_t>> frames;
};

TEST(TaskPluginTest, LoadsTheExamplePluginAndRollsItOut) {
  const std::string plugin =
      BuildPlugin(ROBOLOOP_SOURCE_DIR "/sim/examples/task_plugin/slider_reach_plugin.c", "slider");
  TaskRegistry registry;
  ASSERT_TRUE(LoadTaskPlugin(plugin, &registry).ok());
  auto task = registry.Create("plugin-slider-reach");
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_EQ((*task)->obs_spec().size(), 3);
  EXPECT_EQ((*task)->action_spec().size(), 1);
  EXPECT_EQ(DescribeObsSpec((*task)->obs_spec()), "{position[1], velocity[1], target[1], side:rgb[32x32]}");
  RandomPolicy policy(**task, 2);
  RolloutOptions options;
  options.num_episodes = 4;
  options.num_envs = 2;
  options.max_steps = 20;
  options.record_trajectories = true;
  FrameSink sink;
  auto engine = RolloutEngine::Create(task->get(), options);
  ASSERT_TRUE(engine.ok()) << engine.status();
  ASSERT_TRUE((*engine)->Run(policy, sink).ok());
  ASSERT_EQ(sink.records.size(), 4u);
  EXPECT_EQ(sink.records[0].length, 20);
  EXPECT_NE(sink.records[0].state_hash_chain, sink.records[1].state_hash_chain);
  ASSERT_EQ(sink.frames[0].size(), 20u * 32 * 32 * 3) << "the side camera is rendered at every step";
  EXPECT_NE(sink.frames[0], sink.frames[1]) << "the cart shows in the frames";
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
  EXPECT_NE(status.message().find("ABI version 1, this roboloop supports version 3"),
            std::string::npos) << status;
  EXPECT_NE(status.message().find("rebuild the plugin against MuJoCo 3"), std::string::npos) << status;
  EXPECT_TRUE(registry.Names().empty());
}

TEST(TaskPluginTest, RefusesAVersionTwoPluginWithoutCameras) {
  const std::string plugin = BuildPlugin(ROBOLOOP_SOURCE_DIR "/tests/sim/wrong_abi_plugin.c",
                                         "version2", "-DCLAIMED_ABI_VERSION=2u");
  TaskRegistry registry;
  const absl::Status status = LoadTaskPlugin(plugin, &registry);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("ABI version 2, this roboloop supports version 3 (version 2 predates camera "
                                  "observations: rebuild the plugin"),
            std::string::npos) << status;
  EXPECT_TRUE(registry.Names().empty());
}

TEST(TaskPluginTest, APluginCameraTheModelLacksNamesTheTaskAndCamera) {
  const std::string plugin = BuildPlugin(ROBOLOOP_SOURCE_DIR "/sim/examples/task_plugin/slider_reach_plugin.c",
                                         "badcamera", "-DSLIDER_REACH_CAMERA='\"wrist\"'");
  TaskRegistry registry;
  ASSERT_TRUE(LoadTaskPlugin(plugin, &registry).ok());
  const absl::Status status = registry.Create("plugin-slider-reach").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("plug-in task plugin-slider-reach: camera 'side' names MJCF camera 'wrist', "
                                  "which the model lacks; its cameras: side"),
            std::string::npos) << status;
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
