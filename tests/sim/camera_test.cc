// Camera observations (issue 23, reqs 1, 2 and 9): YAML tasks declare cameras, which are checked
// against the model; the env pool renders every env after reset and each step with one GL
// context per thread; the same state gives the same pixels, and frames do not depend on the
// number of threads or envs; the policy sees the frames the trajectory records.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "common/png.h"
#include "sim/camera_renderer.h"
#include "sim/gl_context.h"
#include "sim/physics_state.h"
#include "sim/random_policy.h"
#include "sim/render.h"
#include "sim/rollout.h"
#include "sim/task_definition_hash.h"
#include "tests/sim/camera_task.h"

namespace roboloop::sim {
namespace {

using ::testing::HasSubstr;
using testing::CameraTask;
using testing::WriteCameraTask;

// Steers by what it sees: each action is a mean colour channel of one camera's frame, so
// trajectories depend on the pixels. Keeps the frames of each (episode, step) it was given.
class LookingPolicy : public Policy {
 public:
  explicit LookingPolicy(const Task& task) : task_(task) {}
  std::string name() const override { return "looking"; }
  const ObsSpec& obs_spec() const override { return task_.obs_spec(); }
  const ActionSpec& action_spec() const override { return task_.action_spec(); }
  absl::Status Act(const PolicyBatch& batch, float* actions) override {
    if (batch.images == nullptr) return absl::InvalidArgumentError("no images");
    const int bytes = task_.obs_spec().image_bytes();
    for (int row = 0; row < batch.batch; ++row) {
      const uint8_t* images = batch.images + static_cast<size_t>(row) * bytes;
      seen[{batch.episode_index[row], batch.step[row]}].assign(images, images + bytes);
      for (int k = 0; k < 2; ++k) {
        double sum = 0;
        for (int i = k; i < bytes; i += 3) sum += images[i];
        actions[row * 2 + k] = static_cast<float>(4.0 * (sum / (bytes / 3) / 255.0 - 0.35));
      }
    }
    return absl::OkStatus();
  }
  std::map<std::pair<int64_t, int32_t>, std::vector<uint8_t>> seen;

 private:
  const Task& task_;
};

// Keeps each episode's trajectory.
class TrajectorySink : public EpisodeSink {
 public:
  absl::Status OnEpisode(const EpisodeRecord& record, const Trajectory* trajectory) override {
    records[record.episode_index] = record;
    trajectories[record.episode_index] = *trajectory;
    return absl::OkStatus();
  }
  std::map<int64_t, EpisodeRecord> records;
  std::map<int64_t, Trajectory> trajectories;
};

TrajectorySink RunLooking(const Task& task, int envs, int threads, LookingPolicy* policy, bool overlap = false) {
  RolloutOptions options;
  options.overlap_inference = overlap;
  options.base_seed = 11;
  options.num_episodes = 4;
  options.num_envs = envs;
  options.num_threads = threads;
  options.record_trajectories = true;
  TrajectorySink sink;
  auto engine = RolloutEngine::Create(&task, options);
  EXPECT_TRUE(engine.ok()) << engine.status();
  if (engine.ok()) {
    EXPECT_TRUE((*engine)->Run(*policy, sink).ok());
  }
  return sink;
}

TEST(CameraTaskTest, YamlCamerasBecomeTheObsSpecsImages) {
  auto task = CameraTask();
  ASSERT_NE(task, nullptr);
  EXPECT_EQ(DescribeObsSpec(task->obs_spec()), "{puck[3], top:rgb[32x32], view:rgb[16x24]}");
  ASSERT_EQ(task->obs_spec().cameras.size(), 2u);
  EXPECT_EQ(task->obs_spec().cameras[0].camera, "top");
  EXPECT_EQ(task->obs_spec().cameras[1].camera, "");
  EXPECT_EQ(task->obs_spec().image_bytes(), 32 * 32 * 3 + 16 * 24 * 3);
  auto other = LoadYamlTask(
      WriteCameraTask("side", "cameras: [{name: top, camera: side, width: 32, height: 32}, {name: view, width: 24, "
                              "height: 16}]\n"));
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE(TaskDefinitionHash(*task, ""), TaskDefinitionHash(**other, "")) << "the MJCF camera is hashed";
}

TEST(CameraTaskTest, ALargeCameraEnlargesTheOffscreenBuffer) {
  auto task = LoadYamlTask(WriteCameraTask("large", "cameras: [{name: top, camera: top, width: 900, height: 700}]\n"));
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_GE((*task)->model()->vis.global.offwidth, 900);
  EXPECT_GE((*task)->model()->vis.global.offheight, 700);
}

TEST(CameraTaskTest, BadCamerasNameTheFileTaskAndCamera) {
  struct Case {
    std::string name, cameras, expected;
  };
  const std::vector<Case> cases = {
      {"unknown", "cameras: [{name: wrist, camera: wrist_cam, width: 32, height: 32}]\n",
       "camera 'wrist' names MJCF camera 'wrist_cam', which the model lacks; its cameras: top, side"},
      {"zero", "cameras: [{name: top, camera: top, width: 0, height: 32}]\n",
       "camera 'top' width 0 is outside 1..2048"},
      {"huge", "cameras: [{name: top, camera: top, width: 32, height: 100000}]\n",
       "camera 'top' height 100000 is outside 1..2048"},
      {"duplicate", "cameras: [{name: puck, camera: top, width: 8, height: 8}]\n", "duplicate observation 'puck'"},
      {"typo", "cameras: [{name: top, cam: top, width: 8, height: 8}]\n", "cam"},
      {"image_key_second", "cameras: [{name: a, width: 8, height: 8}, {name: a_image, width: 8, height: 8}]\n",
       ":19: cameras[1]: duplicate observation 'a_image'"},
      {"image_key_first", "cameras: [{name: a_image, width: 8, height: 8}, {name: a, width: 8, height: 8}]\n",
       ":19: cameras[1]: camera 'a': its image key 'a_image' is taken by another observation"},
      {"slash", "cameras: [{name: \"a b/c\", width: 8, height: 8}]\n",
       ":19: cameras[0].name: camera 'a b/c' cannot be a dataset key"},
  };
  for (const Case& c : cases) {
    const std::string path = WriteCameraTask(c.name, c.cameras);
    auto task = LoadYamlTask(path);
    ASSERT_FALSE(task.ok()) << c.name;
    EXPECT_EQ(task.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(task.status().message(), HasSubstr(path + ":")) << c.name;
    EXPECT_THAT(task.status().message(), HasSubstr("camera-reach")) << c.name;
    EXPECT_THAT(task.status().message(), HasSubstr(c.expected)) << c.name;
  }
}

TEST(CameraRenderTest, SameStateSamePixelsAfterSteppingElsewhere) {
  auto task = CameraTask();
  ASSERT_NE(task, nullptr);
  const mjModel* m = task->model();
  auto renderer = CameraRenderer::Create(m, task->obs_spec().cameras, CameraRenderer::Options());
  ASSERT_TRUE(renderer.ok()) << renderer.status();
  DataPtr data = MakeData(m).value();
  data->qpos[0] = 0.2;
  data->mocap_pos[0] = -0.25;
  mj_forward(m, data.get());
  std::vector<double> state(PhysicsStateSize(m));
  CapturePhysicsState(m, data.get(), state.data());
  const int bytes = task->obs_spec().image_bytes();
  std::vector<uint8_t> first(bytes), moved(bytes), again(bytes);
  ASSERT_TRUE((*renderer)->Render(m, data.get(), first.data()).ok());
  data->ctrl[0] = 1;
  data->ctrl[1] = -1;
  for (int i = 0; i < 40; ++i) mj_step(m, data.get());
  ASSERT_TRUE((*renderer)->Render(m, data.get(), moved.data()).ok());
  RestorePhysicsState(m, state.data(), data.get());
  ASSERT_TRUE((*renderer)->Render(m, data.get(), again.data()).ok());
  EXPECT_EQ(first, again) << "bitwise equal after restoring the state";
  EXPECT_NE(first, moved) << "the moved puck shows";
  std::map<uint8_t, int> reds;
  for (int i = 0; i < 32 * 32 * 3; i += 3) ++reds[first[i]];
  EXPECT_GT(reds.size(), 3u) << "the top camera's frame is not blank";
}

TEST(CameraRenderTest, FramesDoNotDependOnThreadsOrEnvsAndThePolicySeesThem) {
  auto task = CameraTask();
  ASSERT_NE(task, nullptr);
  LookingPolicy serial_policy(*task), parallel_policy(*task), overlapped_policy(*task);
  TrajectorySink serial = RunLooking(*task, 1, 1, &serial_policy);
  TrajectorySink parallel = RunLooking(*task, 3, 2, &parallel_policy);
  TrajectorySink overlapped = RunLooking(*task, 4, 2, &overlapped_policy, /*overlap=*/true);
  ASSERT_EQ(serial.trajectories.size(), 4u);
  ASSERT_EQ(parallel.trajectories.size(), 4u);
  ASSERT_EQ(overlapped.trajectories.size(), 4u);
  const size_t bytes = task->obs_spec().image_bytes();
  for (const auto& [episode, trajectory] : serial.trajectories) {
    EXPECT_TRUE(serial.records[episode].SameOutcome(parallel.records[episode])) << episode;
    EXPECT_TRUE(serial.records[episode].SameOutcome(overlapped.records[episode])) << episode;
    const std::vector<uint8_t>& images = trajectory.images;
    ASSERT_EQ(images.size(), trajectory.dones.size() * bytes) << episode;
    EXPECT_EQ(images, parallel.trajectories[episode].images) << "episode " << episode;
    EXPECT_EQ(images, overlapped.trajectories[episode].images) << "episode " << episode;
    for (size_t step = 0; step < trajectory.dones.size(); ++step) {
      const std::vector<uint8_t> recorded(images.begin() + step * bytes, images.begin() + (step + 1) * bytes);
      const std::pair<int64_t, int32_t> key(episode, static_cast<int32_t>(step));
      EXPECT_EQ(serial_policy.seen[key], recorded) << episode << "/" << step;
    }
  }
  EXPECT_NE(serial.trajectories[0].images, serial.trajectories[1].images);
}

TEST(CameraRenderTest, CameraPngsAreWhatThePolicySaw) {
  auto task = CameraTask();
  ASSERT_NE(task, nullptr);
  LookingPolicy policy(*task);
  TrajectorySink sink = RunLooking(*task, 2, 1, &policy);
  const Trajectory& trajectory = sink.trajectories[0];
  auto pngs = RenderCameraStatesAsPng(*task, "top", trajectory.states, 3);
  ASSERT_TRUE(pngs.ok()) << pngs.status();
  ASSERT_EQ(pngs->size(), 3u);
  EXPECT_EQ((*pngs)[0].substr(1, 3), "PNG");
  auto first = RenderCameraStatesAsPng(*task, "top", {trajectory.states.begin(),
                                                      trajectory.states.begin() + PhysicsStateSize(task->model())}, 1);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ((*first)[0], (*pngs)[0]);
  const std::vector<uint8_t> seen(trajectory.images.begin(), trajectory.images.begin() + 32 * 32 * 3);
  EXPECT_EQ((*pngs)[0], EncodePngRgb(32, 32, seen).value()) << "the top camera's first frame in the rollout";
  const absl::Status unknown = RenderCameraStatesAsPng(*task, "wrist", trajectory.states, 1).status();
  EXPECT_EQ(unknown.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(unknown.message(), HasSubstr("task camera-reach has no camera observation 'wrist'; its cameras: top, view"));
}

TEST(GlBackendTest, UnknownMujocoGlIsAClearError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("MUJOCO_GL", "vulkan", 1);
        const absl::Status status = GlContext::Create(8, 8).status();
        std::fprintf(stderr, "%s\n", std::string(status.message()).c_str());
        std::exit(status.code() == absl::StatusCode::kInvalidArgument ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "MUJOCO_GL='vulkan' is not a rendering backend roboloop has; use osmesa");
}

// Renders the camera task's reset state twice with `backend` (in a child process, where
// MUJOCO_GL is read afresh) and exits 0 when both frames are equal and not blank.
void RenderTwiceWith(const char* backend) {
  setenv("MUJOCO_GL", backend, 1);
  auto task = CameraTask();
  auto renderer = CameraRenderer::Create(task->model(), task->obs_spec().cameras, CameraRenderer::Options());
  if (!renderer.ok()) {
    std::fprintf(stderr, "%s\n", std::string(renderer.status().message()).c_str());
    std::exit(2);
  }
  DataPtr data = MakeData(task->model()).value();
  mj_forward(task->model(), data.get());
  std::vector<uint8_t> first(task->obs_spec().image_bytes()), again(first.size());
  if (!(*renderer)->Render(task->model(), data.get(), first.data()).ok() ||
      !(*renderer)->Render(task->model(), data.get(), again.data()).ok()) {
    std::exit(3);
  }
  const bool blank = std::count(first.begin(), first.end(), first[0]) == static_cast<long>(first.size());
  std::fprintf(stderr, "rendered with %s\n", GlBackendName((*renderer)->backend()));
  std::exit(first == again && !blank ? 0 : 4);
}

TEST(GlBackendTest, EglRendersTheSamePixelsTwice) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(RenderTwiceWith("egl"), ::testing::ExitedWithCode(0), "rendered with egl");
}

// Creates a context with `backend` (in a child process, where MUJOCO_GL is read afresh), prints
// "renderer: <GL_RENDERER>" and exits 0 when that string contains `expected`.
void PrintRendererExpecting(const char* backend, const char* expected) {
  setenv("MUJOCO_GL", backend, 1);
  absl::StatusOr<std::unique_ptr<GlContext>> gl = GlContext::Create(8, 8);
  absl::StatusOr<std::string> renderer = gl.ok() ? (*gl)->Renderer() : gl.status();
  if (!renderer.ok()) {
    std::fprintf(stderr, "%s\n", std::string(renderer.status().message()).c_str());
    std::exit(2);
  }
  std::fprintf(stderr, "renderer: %s\n", renderer->c_str());
  std::exit(renderer->find(expected) != std::string::npos ? 0 : 3);
}

TEST(GlBackendTest, OsMesaNamesItsSoftwareRenderer) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(PrintRendererExpecting("osmesa", "pipe"), ::testing::ExitedWithCode(0), "renderer: .*pipe");
}

// On a machine with NVIDIA's driver, MUJOCO_GL=egl renders on the GPU (the EGL device
// platform), not in software, and gives the same frame twice. Label gpu (scripts/gpu-check.sh).
TEST(GlBackendTest, EglRendersOnTheNvidiaGpu) {
  if (!std::ifstream("/proc/driver/nvidia/version")) GTEST_SKIP() << "no NVIDIA driver (/proc/driver/nvidia/version)";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(PrintRendererExpecting("egl", "NVIDIA"), ::testing::ExitedWithCode(0), "renderer: NVIDIA");
  EXPECT_EXIT(RenderTwiceWith("egl"), ::testing::ExitedWithCode(0), "rendered with egl");
}

// True when /proc/self/maps shows a GL library.
bool GlMapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("libOSMesa") != std::string::npos || line.find("libEGL") != std::string::npos) return true;
  }
  return false;
}

TEST(GlBackendTest, ATaskWithoutCamerasLoadsNoGl) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        auto task = LoadYamlTask(WriteCameraTask("nocameras", ""));
        RolloutOptions options;
        options.num_episodes = 2;
        options.num_threads = 2;
        RandomPolicy policy(**task, 1);
        const bool ran = RunRollout(**task, policy, options).ok();
        std::fprintf(stderr, "ran %d, GL mapped %d\n", ran, GlMapped());
        std::exit(ran && !GlMapped() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "ran 1, GL mapped 0");
}

}  // namespace
}  // namespace roboloop::sim
