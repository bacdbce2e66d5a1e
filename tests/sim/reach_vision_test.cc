// The reach-vision task (issue 23, req 5): the target is drawn inside its square and away from
// the finger, the state observation leaves it out (only the camera and the expert's privileged
// state hold it), and the expert needs that privileged state (experts_test checks that it
// reaches the target and that doing nothing does not).
#include <cmath>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
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

}  // namespace
}  // namespace roboloop::sim
