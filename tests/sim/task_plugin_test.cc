// Out-of-tree task plugins (issue 4, req 2b): the reference example is compiled here as its
// own shared library, against the public headers only, then loaded, rolled out and checked;
// its camera is rendered and shows the scene, lit without saturating; a plugin for another ABI version, a missing file and a duplicate name
// are refused, as is a model without actuators; a reward or an observation that is NaN stops the rollout, as
// does an observe callback that writes past its declared size.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <vector>
#include <string>

#include "common/status.h"
#include "gtest/gtest.h"
#include "sim/camera_renderer.h"
#include "sim/env.h"
#include "sim/random_policy.h"
#include "sim/rng.h"
#include "sim/rollout.h"
#include "sim/task_plugin.h"
#include "tests/sim/plugin_build.h"

namespace roboloop::sim {
namespace {

using testing::BuildPlugin;
using testing::BuildTestPlugin;

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

// The share of a frame's pixels that are saturated (255 in some channel), and its mean value.
struct FrameLight {
  double saturated = 0.0;
  double mean = 0.0;
};

FrameLight LightOf(const std::vector<uint8_t>& frame) {
  FrameLight light;
  int saturated = 0;
  for (size_t i = 0; i + 2 < frame.size(); i += 3) {
    saturated += std::max({frame[i], frame[i + 1], frame[i + 2]}) == 255;
    light.mean += frame[i] + frame[i + 1] + frame[i + 2];
  }
  light.saturated = 3.0 * saturated / frame.size();
  light.mean /= frame.size();
  return light;
}

// Whether some pixel of `frame` is clearly of colour channel `c` (0 red, 2 blue).
bool HasPixelOfColour(const std::vector<uint8_t>& frame, int c) {
  for (size_t i = 0; i + 2 < frame.size(); i += 3) {
    const int others = std::max({c == 0 ? 0 : frame[i], c == 1 ? 0 : frame[i + 1], c == 2 ? 0 : frame[i + 2]});
    if (frame[i + c] >= 96 && frame[i + c] > 2 * others) return true;
  }
  return false;
}

// The example's side camera sees the scene: a mid-grey frame, not black and not blown out, with
// the blue cart and the red target in it, whatever the episode's target.
TEST(TaskPluginTest, TheExamplesSideCameraShowsTheLitSceneWithoutSaturating) {
  const std::string plugin =
      BuildPlugin(ROBOLOOP_SOURCE_DIR "/sim/examples/task_plugin/slider_reach_plugin.c", "slider_light");
  TaskRegistry registry;
  ASSERT_TRUE(LoadTaskPlugin(plugin, &registry).ok());
  auto task = registry.Create("plugin-slider-reach");
  ASSERT_TRUE(task.ok()) << task.status();
  auto env = Env::Create(task->get(), EnvOptions());
  ASSERT_TRUE(env.ok()) << env.status();
  auto renderer =
      CameraRenderer::Create((*task)->model(), (*task)->obs_spec().cameras, CameraRenderer::Options());
  ASSERT_TRUE(renderer.ok()) << renderer.status();
  std::vector<float> obs((*task)->obs_spec().size());
  std::vector<uint8_t> frame((*task)->obs_spec().image_bytes());
  for (int episode = 0; episode < 5; ++episode) {
    ASSERT_TRUE((*env)->Reset(EpisodeSeed(11, episode), episode, obs.data()).ok());
    ASSERT_TRUE((*renderer)->Render((*task)->model(), (*env)->data(), frame.data()).ok());
    const FrameLight light = LightOf(frame);
    EXPECT_GE(light.mean, 64.0) << "episode " << episode << ": the frame is dark";
    EXPECT_LE(light.mean, 192.0) << "episode " << episode << ": the frame is washed out";
    EXPECT_LT(light.saturated, 0.05) << "episode " << episode;
    EXPECT_TRUE(HasPixelOfColour(frame, 2)) << "episode " << episode << ": no blue cart";
    EXPECT_TRUE(HasPixelOfColour(frame, 0)) << "episode " << episode << ": no red target at " << obs[2];
  }
}

// Rolls out 3 episodes of the test plug-in built with `flags` (as lib<name>.so) with a random
// policy into `sink`, trajectories recorded; returns how the rollout ended.
absl::Status RollOutTestPlugin(const std::string& name, const std::string& flags, FrameSink& sink) {
  TaskRegistry registry;
  ROBOLOOP_RETURN_IF_ERROR(LoadTaskPlugin(BuildTestPlugin(name, flags), &registry));
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<Task> task, registry.Create("test-plugin"));
  RandomPolicy policy(*task, 2);
  RolloutOptions options;
  options.num_episodes = 3;
  options.num_envs = 2;
  options.record_trajectories = true;
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<RolloutEngine> engine, RolloutEngine::Create(task.get(), options));
  return engine->Run(policy, sink);
}

TEST(TaskPluginTest, ANanRewardStopsTheRolloutNamingTheTaskEpisodeAndStep) {
  FrameSink sink;
  const absl::Status status = RollOutTestPlugin("nan_reward", "-DNAN_REWARD_AFTER=0.045", sink);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("task test-plugin returned a non-finite reward in episode 0 (seed "),
            std::string::npos) << status;
  EXPECT_NE(status.message().find("the reward of step 4 is nan"), std::string::npos) << status;
  EXPECT_TRUE(sink.records.empty()) << "no episode with a NaN reward reaches the sink";
}

TEST(TaskPluginTest, ANanObservationStopsTheRolloutNamingTheTaskEpisodeKeyAndStep) {
  FrameSink sink;
  const absl::Status status = RollOutTestPlugin("nan_obs", "-DNAN_OBS_AFTER=0.045", sink);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("task test-plugin returned a non-finite observation in episode 0 (seed "),
            std::string::npos) << status;
  EXPECT_NE(status.message().find("observation 'x'[0] of step 4 is nan"), std::string::npos) << status;
  EXPECT_TRUE(sink.records.empty()) << "no episode with a NaN observation reaches the sink (or a dataset)";
}

TEST(TaskPluginTest, AnObservationWrittenPastItsDeclaredSizeAtResetStopsTheRolloutNamingThePlugin) {
  FrameSink sink;
  const absl::Status status = RollOutTestPlugin("overflow_reset", "-DOBS_OVERFLOW=2 -DOBS_OVERFLOW_AFTER=-1", sink);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("task test-plugin at reset (seed "), std::string::npos) << status;
  EXPECT_NE(status.message().find("task plug-in test-plugin (library " + ::testing::TempDir() +
                                  "/liboverflow_reset.so): its observe callback wrote past the end of the "
                                  "observation buffer: at least 3 floats where its obs keys declare 1"),
            std::string::npos) << status;
  EXPECT_TRUE(sink.records.empty());
}

TEST(TaskPluginTest, AnObservationWrittenPastItsDeclaredSizeStopsTheRolloutNamingThePluginEpisodeAndStep) {
  FrameSink sink;
  const absl::Status status = RollOutTestPlugin("overflow_step", "-DOBS_OVERFLOW=16 -DOBS_OVERFLOW_AFTER=0.045", sink);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("task test-plugin failed in episode 0 (seed "), std::string::npos) << status;
  EXPECT_NE(status.message().find("/liboverflow_step.so): its observe callback wrote past the end of the "
                                  "observation buffer: at least 17 floats where its obs keys declare 1 (step 4); "
                                  "the rollout stops"),
            std::string::npos) << status;
  EXPECT_TRUE(sink.records.empty()) << "no episode whose plug-in overran its buffer reaches the sink";
}

TEST(TaskPluginTest, AnInvalidCallTimeoutIsRefusedWhenAPluginLoads) {
  const std::string plugin = BuildTestPlugin("timeout_value");
  setenv("ROBOLOOP_PLUGIN_CALL_TIMEOUT_S", "-1", 1);
  TaskRegistry registry;
  const absl::Status status = LoadTaskPlugin(plugin, &registry);
  unsetenv("ROBOLOOP_PLUGIN_CALL_TIMEOUT_S");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("task plugin " + plugin + ": ROBOLOOP_PLUGIN_CALL_TIMEOUT_S='-1' must be"),
            std::string::npos) << status;
  EXPECT_TRUE(registry.Names().empty());
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

TEST(TaskPluginTest, APluginCameraTheModelLacksNamesTheLibraryTaskAndCamera) {
  const std::string plugin = BuildPlugin(ROBOLOOP_SOURCE_DIR "/sim/examples/task_plugin/slider_reach_plugin.c",
                                         "badcamera", "-DSLIDER_REACH_CAMERA='\"wrist\"'");
  TaskRegistry registry;
  ASSERT_TRUE(LoadTaskPlugin(plugin, &registry).ok());
  const absl::Status status = registry.Create("plugin-slider-reach").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("task plugin " + plugin +
                                  ": plug-in task plugin-slider-reach: camera 'side' names MJCF camera 'wrist', "
                                  "which the model lacks; its cameras: side"),
            std::string::npos) << status;
}

TEST(TaskPluginTest, NamesThatCannotBeDatasetKeysAreRefusedNamingTheLibraryAndField) {
  struct Case {
    std::string name, flags, expected;
  };
  const std::vector<Case> cases = {
      {"slash_task", "-DTASK_NAME='\"my/task\"'", "task my/task: name: task name 'my/task' cannot be a dataset key"},
      {"slash_key", "-DOBS_KEY_NAME='\"a/b\"'",
       "task test-plugin: obs_keys[0].name: observation 'a/b' cannot be a dataset key"},
      {"space_camera", "-DCAMERA_NAME='\"a b\"'",
       "task test-plugin: cameras[0].name: camera 'a b' cannot be a dataset key"},
  };
  for (const Case& c : cases) {
    const std::string plugin = BuildTestPlugin(c.name, c.flags);
    TaskRegistry registry;
    const absl::Status status = LoadTaskPlugin(plugin, &registry);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.name << ": " << status;
    EXPECT_NE(status.message().find("task plugin " + plugin + ": " + c.expected), std::string::npos)
        << c.name << ": " << status;
    EXPECT_TRUE(registry.Names().empty()) << c.name;
  }
}

TEST(TaskPluginTest, BadInlineMjcfNamesTheLibrary) {
  const std::string plugin = BuildTestPlugin("bad_mjcf", "-DMJCF='\"<mujoco><worldbody>\"'");
  TaskRegistry registry;
  ASSERT_TRUE(LoadTaskPlugin(plugin, &registry).ok());
  const absl::Status status = registry.Create("test-plugin").status();
  EXPECT_NE(status.message().find("task plugin " + plugin + ": MJCF test-plugin failed to compile"),
            std::string::npos) << status;
}

TEST(TaskPluginTest, AModelWithoutActuatorsNamesTheLibraryAndTask) {
  const std::string plugin = BuildTestPlugin("unactuated", "-DMJCF='\"<mujoco><worldbody/></mujoco>\"'");
  TaskRegistry registry;
  ASSERT_TRUE(LoadTaskPlugin(plugin, &registry).ok());
  const absl::Status status = registry.Create("test-plugin").status();
  EXPECT_NE(status.message().find("task plugin " + plugin + ": plug-in task test-plugin: the model has no actuators"),
            std::string::npos) << status;
}

TEST(TaskPluginTest, AFailingEntryPointIsNotCalledAnAbiRefusal) {
  const std::string plugin = BuildTestPlugin("negative", "-DENTRY_RESULT=-2");
  TaskRegistry registry;
  const absl::Status status = LoadTaskPlugin(plugin, &registry);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("task plugin " + plugin + ": the entry point failed: it returned -2"),
            std::string::npos) << status;
  EXPECT_EQ(status.message().find("refused"), std::string::npos) << status;
}

TEST(TaskPluginTest, MissingLibraryIsAClearError) {
  TaskRegistry registry;
  const absl::Status status = LoadTaskPlugin("/nonexistent/libtask.so", &registry);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("/nonexistent/libtask.so"), std::string::npos);
}

// Restores the working directory on destruction.
class WorkingDirectory {
 public:
  explicit WorkingDirectory(const std::string& dir) : saved_(std::filesystem::current_path()) {
    std::filesystem::current_path(dir);
  }
  ~WorkingDirectory() { std::filesystem::current_path(saved_); }

 private:
  std::filesystem::path saved_;
};

TEST(TaskPluginTest, ANameWithoutASlashIsAFileInTheWorkingDirectory) {
  const std::string plugin = BuildTestPlugin("in_cwd");
  WorkingDirectory cwd(std::filesystem::path(plugin).parent_path().string());
  TaskRegistry registry;
  const absl::Status loaded = LoadTaskPlugin("libin_cwd.so", &registry);
  ASSERT_TRUE(loaded.ok()) << loaded;
  EXPECT_TRUE(registry.Contains("test-plugin"));
  const absl::Status missing = LoadTaskPlugin("libm.so.6", &registry);
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument) << "the library path is not searched";
  EXPECT_NE(missing.message().find("task plugin libm.so.6 failed to load"), std::string::npos) << missing;
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

TEST(TaskPluginTest, EnvironmentVariableNamesAreFilesInTheWorkingDirectory) {
  const std::string plugin = BuildTestPlugin("env_in_cwd");
  WorkingDirectory cwd(std::filesystem::path(plugin).parent_path().string());
  setenv("ROBOLOOP_TASK_PLUGINS", "libenv_in_cwd.so", 1);
  TaskRegistry registry;
  const absl::Status loaded = LoadTaskPluginsFromEnvironment(&registry);
  unsetenv("ROBOLOOP_TASK_PLUGINS");
  ASSERT_TRUE(loaded.ok()) << loaded;
  EXPECT_TRUE(registry.Contains("test-plugin"));
}

}  // namespace
}  // namespace roboloop::sim
