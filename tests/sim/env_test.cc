// Env boundary behaviour (issue 4, reqs 1 and 10): MuJoCo errors become statuses, bad
// actions end only their episode, divergence is reported as unstable, bad MJCF names the
// file, and the full physics state round-trips through capture/restore.
#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "sim/physics_state.h"
#include "sim/random_policy.h"
#include "sim/rollout.h"
#include "tests/sim/test_tasks.h"

namespace roboloop::sim {
namespace {

TEST(MujocoGuardTest, MujocoErrorBecomesAStatusInsteadOfExiting) {
  const absl::Status status = GuardMujoco("test call", [] { mju_error("deliberate failure"); });
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_NE(status.message().find("deliberate failure"), std::string::npos);
  EXPECT_NE(status.message().find("test call"), std::string::npos);
}

TEST(MujocoGuardTest, EngineErrorWhileCompilingIsReportedNotFatal) {
  auto model = LoadModelFromString("tiny_stack", R"(<mujoco><size memory="10"/><worldbody>
      <body><freejoint/><geom size=".1"/></body></worldbody></mujoco>)");
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("stack overflow"), std::string::npos) << model.status();
  EXPECT_NE(model.status().message().find("tiny_stack"), std::string::npos) << model.status();
}

TEST(MujocoGuardTest, BadMjcfReportsMujocoMessageAndFile) {
  const std::string path = ::testing::TempDir() + "/broken.xml";
  FILE* f = fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs("<mujoco><worldbody><geom type=\"nonsense\"/></worldbody></mujoco>", f);
  fclose(f);
  auto model = LoadModelFromFile(path);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find(path), std::string::npos) << model.status();
  EXPECT_NE(model.status().message().find("nonsense"), std::string::npos) << model.status();
}

class EnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    task_ = testing::BuiltinTask("cartpole-swingup");
    auto env = Env::Create(task_.get(), EnvOptions());
    ASSERT_TRUE(env.ok());
    env_ = std::move(env).value();
    obs_.resize(task_->obs_spec().size());
    ASSERT_TRUE(env_->Reset(EpisodeSeed(1, 0), 0, obs_.data()).ok());
  }
  std::unique_ptr<Task> task_;
  std::unique_ptr<Env> env_;
  std::vector<float> obs_;
};

TEST_F(EnvTest, NanActionEndsTheEpisodeAsInvalidAction) {
  const float action = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(env_->Step(&action, 1, obs_.data()), EndReason::kInvalidAction);
  EXPECT_NE(env_->end_detail().find("action[0]"), std::string::npos) << env_->end_detail();
  EXPECT_FALSE(env_->success());
}

TEST_F(EnvTest, WrongSizedActionEndsTheEpisodeAsInvalidAction) {
  const float action[2] = {0, 0};
  EXPECT_EQ(env_->Step(action, 2, obs_.data()), EndReason::kInvalidAction);
  EXPECT_NE(env_->end_detail().find("2 values"), std::string::npos) << env_->end_detail();
}

TEST_F(EnvTest, DivergingPhysicsEndsTheEpisodeAsUnstable) {
  env_->data()->qvel[1] = 1e300;
  const float action = 0;
  EXPECT_EQ(env_->Step(&action, 1, obs_.data()), EndReason::kUnstable);
  EXPECT_NE(env_->end_detail().find("diverged"), std::string::npos) << env_->end_detail();
}

TEST_F(EnvTest, OutOfBoundsActionsAreClipped) {
  const float action = 50;
  env_->Step(&action, 1, obs_.data());
  EXPECT_EQ(env_->data()->ctrl[0], 1.0);
}

TEST(PhysicsStateTest, CaptureRestoreReproducesTheStateHash) {
  auto task = testing::BuiltinTask("reacher");
  auto a = Env::Create(task.get(), EnvOptions());
  auto b = Env::Create(task.get(), EnvOptions());
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<float> obs(task->obs_spec().size());
  ASSERT_TRUE((*a)->Reset(11, 0, obs.data()).ok());
  ASSERT_TRUE((*b)->Reset(12, 1, obs.data()).ok());
  EXPECT_NE((*a)->current_state_hash(), (*b)->current_state_hash());
  std::vector<double> state(PhysicsStateSize(task->model()));
  CapturePhysicsState(task->model(), (*a)->data(), state.data());
  RestorePhysicsState(task->model(), state.data(), (*b)->data());
  EXPECT_EQ((*a)->current_state_hash(), (*b)->current_state_hash());
}

TEST(RobustnessTest, PerturbationsChangeEpisodesReproducibly) {
  auto task = testing::BuiltinTask("reacher");
  auto expert = task->MakeExpert();
  ASSERT_TRUE(expert.ok());
  RolloutOptions plain;
  plain.num_episodes = 3;
  plain.num_envs = 3;
  RolloutOptions perturbed = plain;
  perturbed.robustness.obs_noise_std["target"] = 0.01;
  perturbed.robustness.action_noise_std = 0.1;
  perturbed.robustness.action_delay = 2;
  perturbed.robustness.body_mass = {0.5, 1.5};
  perturbed.robustness.geom_friction = {0.8, 1.2};
  perturbed.robustness.actuator_gain = {0.7, 1.3};
  auto base = RunRollout(*task, **expert, plain);
  auto first = RunRollout(*task, **expert, perturbed);
  perturbed.num_envs = 1;
  auto second = RunRollout(*task, **expert, perturbed);
  ASSERT_TRUE(base.ok() && first.ok() && second.ok()) << first.status();
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE((*base)[i].state_hash_chain, (*first)[i].state_hash_chain);
    EXPECT_TRUE((*first)[i].SameOutcome((*second)[i]));
  }
}

TEST(RobustnessTest, UnknownNoiseKeyIsRefused) {
  auto task = testing::BuiltinTask("reacher");
  EnvOptions options;
  options.robustness.obs_noise_std["elbow_camera"] = 0.1;
  auto env = Env::Create(task.get(), options);
  EXPECT_EQ(env.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(env.status().message().find("elbow_camera"), std::string::npos);
}

}  // namespace
}  // namespace roboloop::sim
