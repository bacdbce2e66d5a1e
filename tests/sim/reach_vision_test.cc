// The reach-vision task (issue 23, req 5): the target is drawn inside its square and away from
// the finger, the state observation leaves it out (only the camera and the expert's privileged
// state hold it), and the expert needs that privileged state (experts_test checks that it
// reaches the target and that doing nothing does not). Its camera frames are lit without
// saturating: the table a mid grey, the target red.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sim/camera_renderer.h"
#include "sim/env.h"
#include "sim/tasks/reach_vision.h"
#include "tests/sim/test_tasks.h"

namespace roboloop::sim {
namespace {

TEST(ReachVisionTest, TheTargetIsOnlyInTheCameraAndThePrivilegedState) {
  auto task = testing::BuiltinTask("reach-vision");
  ASSERT_NE(task, nullptr);
  EXPECT_EQ(DescribeObsSpec(task->obs_spec()), "{finger[2], finger_velocity[2], top:rgb[48x48]}");
  EXPECT_EQ(task->privileged_spec().size(), 2);
  auto env = Env::Create(task.get(), EnvOptions());
  ASSERT_TRUE(env.ok()) << env.status();
  std::vector<float> obs(task->obs_spec().size()), target(2);
  double farthest = 0;
  for (int i = 0; i < 500; ++i) {
    ASSERT_TRUE((*env)->Reset(EpisodeSeed(7, i), i, obs.data()).ok());
    task->ObservePrivileged(task->model(), (*env)->data(), target.data());
    EXPECT_LE(std::abs(target[0]), kReachVisionTargetHalfWidth) << "episode " << i;
    EXPECT_LE(std::abs(target[1]), kReachVisionTargetHalfWidth) << "episode " << i;
    EXPECT_LE(std::abs(obs[0]), kReachVisionStartHalfWidth) << "episode " << i;
    EXPECT_GE(std::hypot(target[0] - obs[0], target[1] - obs[1]), kReachVisionMinTargetDistance)
        << "episode " << i;
    farthest = std::max(farthest, static_cast<double>(std::abs(target[0])));
  }
  EXPECT_GT(farthest, 0.95 * kReachVisionTargetHalfWidth);
}

TEST(ReachVisionTest, TheExpertRefusesABatchWithoutPrivilegedState) {
  auto task = testing::BuiltinTask("reach-vision");
  ASSERT_NE(task, nullptr);
  auto expert = task->MakeExpert();
  ASSERT_TRUE(expert.ok());
  std::vector<float> obs(4, 0.0f), actions(2);
  std::vector<int64_t> episode{0};
  std::vector<int32_t> step{0};
  PolicyBatch batch{obs.data(), episode.data(), step.data(), 1};
  const absl::Status status = (*expert)->Act(batch, actions.data());
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find("privileged"), std::string::npos);
}

// The pixel (row, column) of the 'top' camera's frame showing the table point (x, y): the camera
// looks straight down, its x axis along the world's, the frame's top row at the largest y.
std::pair<int, int> TopCameraPixel(const mjModel* m, double x, double y) {
  const int camera = mj_name2id(m, mjOBJ_CAMERA, "top");
  const double half_view = m->cam_pos[3 * camera + 2] * std::tan(m->cam_fovy[camera] * M_PI / 360);
  const auto to_pixel = [](double unit) { return static_cast<int>(std::floor(unit * kReachVisionImageSide)); };
  return {to_pixel(0.5 - y / (2 * half_view)), to_pixel(0.5 + x / (2 * half_view))};
}

// The pixels of an RGB frame at 255 in every channel.
int WhitePixels(const std::vector<uint8_t>& frame) {
  int white = 0;
  for (size_t i = 0; i + 2 < frame.size(); i += 3) {
    white += frame[i] == 255 && frame[i + 1] == 255 && frame[i + 2] == 255;
  }
  return white;
}

// A vision task whose pixels saturate teaches nothing: across episodes, almost no pixel is white,
// the table (the frame's corners) is a mid grey and the target's centre is clearly red, unsaturated.
TEST(ReachVisionTest, TheCameraSeesAGreyTableAndARedTargetWithoutSaturating) {
  auto task = testing::BuiltinTask("reach-vision");
  ASSERT_NE(task, nullptr);
  auto env = Env::Create(task.get(), EnvOptions());
  ASSERT_TRUE(env.ok()) << env.status();
  auto renderer = CameraRenderer::Create(task->model(), task->obs_spec().cameras, CameraRenderer::Options());
  ASSERT_TRUE(renderer.ok()) << renderer.status();
  constexpr int kSide = kReachVisionImageSide;
  std::vector<float> obs(task->obs_spec().size()), target(2);
  std::vector<uint8_t> frame(task->obs_spec().image_bytes());
  const auto pixel = [&](int row, int column) { return &frame[(static_cast<size_t>(row) * kSide + column) * 3]; };
  for (int episode = 0; episode < 5; ++episode) {
    ASSERT_TRUE((*env)->Reset(EpisodeSeed(3, episode), episode, obs.data()).ok());
    ASSERT_TRUE((*renderer)->Render(task->model(), (*env)->data(), frame.data()).ok());
    EXPECT_LT(WhitePixels(frame), kSide * kSide / 20) << "episode " << episode;
    for (const auto& [row, column] : {std::pair{0, 0}, {0, kSide - 1}, {kSide - 1, 0}, {kSide - 1, kSide - 1}}) {
      const uint8_t* table = pixel(row, column);
      for (int c = 0; c < 3; ++c) {
        EXPECT_GE(int{table[c]}, 64) << "episode " << episode << ": table pixel " << row << "," << column;
        EXPECT_LE(int{table[c]}, 192) << "episode " << episode << ": table pixel " << row << "," << column;
      }
    }
    task->ObservePrivileged(task->model(), (*env)->data(), target.data());
    const auto [row, column] = TopCameraPixel(task->model(), target[0], target[1]);
    const uint8_t* red = pixel(row, column);
    const std::string where = absl::StrCat("episode ", episode, ": target pixel ", row, ",", column, " (",
                                           red[0], ", ", red[1], ", ", red[2], ")");
    EXPECT_GE(int{red[0]}, 96) << where;
    EXPECT_LT(int{red[0]}, 255) << where << " saturates";
    EXPECT_GT(int{red[0]}, 4 * std::max(red[1], red[2])) << where << " is not clearly red";
  }
}

}  // namespace
}  // namespace roboloop::sim
