// The push task (issue 4, req 3): reset draws block start and goal inside the workspace at
// least 0.1 m apart (and the pusher clear of the block), success and termination follow the
// block's position, missing parts are clear errors, expert rollouts are bitwise identical
// for 1 and 2 threads and any number of envs, and the robustness options (req 4) apply.
#include <cmath>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "sim/rollout.h"
#include "sim/tasks/push.h"
#include "tests/sim/test_tasks.h"

namespace roboloop::sim {
namespace {

// Offsets of the observation keys: pusher [0, 2), block [4, 6), goal [8, 10).
constexpr int kPusher = 0, kBlock = 4, kGoal = 8;

double Distance(const float* obs, int a, int b) {
  return std::hypot(obs[a] - obs[b], obs[a + 1] - obs[b + 1]);
}

TEST(PushTest, ResetKeepsStartAndGoalInsideTheWorkspaceAndApart) {
  auto task = testing::BuiltinTask("push");
  ASSERT_NE(task, nullptr);
  auto env = Env::Create(task.get(), EnvOptions());
  ASSERT_TRUE(env.ok()) << env.status();
  std::vector<float> obs(task->obs_spec().size());
  double nearest_goal = 1, farthest_x = 0;
  for (int i = 0; i < 2000; ++i) {
    ASSERT_TRUE((*env)->Reset(EpisodeSeed(3, i), i, obs.data()).ok());
    for (int key : {kBlock, kGoal}) {
      EXPECT_LE(std::abs(obs[key]), kPushWorkspaceHalfWidth) << "episode " << i;
      EXPECT_LE(std::abs(obs[key + 1]), kPushWorkspaceHalfWidth) << "episode " << i;
      farthest_x = std::max(farthest_x, std::abs(static_cast<double>(obs[key])));
    }
    EXPECT_LE(std::abs(obs[kPusher]), kPushPusherHalfWidth) << "episode " << i;
    EXPECT_LE(std::abs(obs[kPusher + 1]), kPushPusherHalfWidth) << "episode " << i;
    const double goal = Distance(obs.data(), kBlock, kGoal);
    EXPECT_GE(goal, kPushMinGoalDistance) << "episode " << i;
    EXPECT_GE(Distance(obs.data(), kPusher, kBlock), kPushMinPusherDistance) << "episode " << i;
    nearest_goal = std::min(nearest_goal, goal);
  }
  // The draws cover the workspace up to its edges and the distance bound.
  EXPECT_GT(farthest_x, 0.98 * kPushWorkspaceHalfWidth);
  EXPECT_LT(nearest_goal, kPushMinGoalDistance + 0.005);
}

TEST(PushTest, SameSeedGivesTheSameResetAndOtherSeedsDiffer) {
  auto task = testing::BuiltinTask("push");
  ASSERT_NE(task, nullptr);
  auto env = Env::Create(task.get(), EnvOptions());
  ASSERT_TRUE(env.ok());
  std::vector<float> a(task->obs_spec().size()), b(a.size()), c(a.size());
  ASSERT_TRUE((*env)->Reset(EpisodeSeed(5, 1), 1, a.data()).ok());
  ASSERT_TRUE((*env)->Reset(EpisodeSeed(5, 2), 2, c.data()).ok());
  ASSERT_TRUE((*env)->Reset(EpisodeSeed(5, 1), 1, b.data()).ok());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

// A fresh mjData of `task` with the block at (bx, by) and the goal at (gx, gy).
struct PlacedState {
  PlacedState(const Task& task, double bx, double by, double gx, double gy)
      : model(task.model()), data(mj_makeData(model), mj_deleteData) {
    data->qpos[model->jnt_qposadr[mj_name2id(model, mjOBJ_JOINT, "block_x")]] = bx;
    data->qpos[model->jnt_qposadr[mj_name2id(model, mjOBJ_JOINT, "block_y")]] = by;
    mjtNum* goal = &data->mocap_pos[3 * model->body_mocapid[mj_name2id(model, mjOBJ_BODY, "goal")]];
    goal[0] = gx;
    goal[1] = gy;
    mj_forward(model, data.get());
  }
  const mjModel* model;
  std::unique_ptr<mjData, void (*)(mjData*)> data;
};

TEST(PushTest, SuccessIsTheBlockWithin5CentimetresOfTheGoal) {
  auto task = testing::BuiltinTask("push");
  ASSERT_NE(task, nullptr);
  EXPECT_EQ(task->success_rule().kind, SuccessRule::Kind::kFinalSteps);
  EXPECT_EQ(task->success_rule().steps, 1);
  EXPECT_EQ(task->max_steps(), 400);
  PlacedState near(*task, 0.1, 0.0, 0.1, 0.049);
  PlacedState far(*task, 0.1, 0.0, 0.1, 0.051);
  EXPECT_TRUE(task->SuccessCondition(near.model, near.data.get()));
  EXPECT_FALSE(task->SuccessCondition(far.model, far.data.get()));
  EXPECT_GT(task->Reward(near.model, near.data.get()), task->Reward(far.model, far.data.get()));
}

TEST(PushTest, BlockLeavingTheTableTerminates) {
  auto task = testing::BuiltinTask("push");
  ASSERT_NE(task, nullptr);
  PlacedState inside(*task, 0.29, -0.29, 0, 0);
  PlacedState off_x(*task, 0.31, 0, 0, 0);
  PlacedState off_y(*task, 0, -0.31, 0, 0);
  EXPECT_FALSE(task->Terminated(inside.model, inside.data.get()));
  EXPECT_TRUE(task->Terminated(off_x.model, off_x.data.get()));
  EXPECT_TRUE(task->Terminated(off_y.model, off_y.data.get()));

  auto env = Env::Create(task.get(), EnvOptions());
  ASSERT_TRUE(env.ok());
  std::vector<float> obs(task->obs_spec().size());
  ASSERT_TRUE((*env)->Reset(EpisodeSeed(1, 0), 0, obs.data()).ok());
  (*env)->data()->qpos[task->model()->jnt_qposadr[mj_name2id(task->model(), mjOBJ_JOINT,
                                                             "block_x")]] = 0.32;
  const float still[2] = {0, 0};
  EXPECT_EQ((*env)->Step(still, 2, obs.data()), EndReason::kTerminated);
}

TEST(PushTest, AModelWithoutThePushersJointsIsAClearError) {
  auto task = MakePushTask(ROBOLOOP_SOURCE_DIR "/configs/tasks/models/reacher.xml");
  ASSERT_FALSE(task.ok());
  EXPECT_EQ(task.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(task.status().message().find("pusher_x"), std::string::npos) << task.status();
}

TEST(PushTest, ExpertRolloutsAreIdenticalFor1And2ThreadsAndAnyEnvCount) {
  auto task = testing::BuiltinTask("push");
  ASSERT_NE(task, nullptr);
  auto expert = task->MakeExpert();
  ASSERT_TRUE(expert.ok()) << expert.status();
  RolloutOptions one;
  one.base_seed = 11;
  one.num_episodes = 8;
  one.num_envs = 1;
  one.num_threads = 1;
  RolloutOptions many = one;
  many.num_envs = 8;
  many.num_threads = 2;
  auto a = RunRollout(*task, **expert, one);
  auto b = RunRollout(*task, **expert, many);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  ASSERT_EQ(a->size(), 8u);
  ASSERT_EQ(b->size(), 8u);
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_TRUE((*a)[i].SameOutcome((*b)[i])) << "episode " << i;
    EXPECT_TRUE((*a)[i].success) << "episode " << i;
  }
  EXPECT_NE((*a)[0].state_hash_chain, (*a)[1].state_hash_chain);
}

TEST(PushTest, RobustnessOptionsChangeEpisodesReproducibly) {
  auto task = testing::BuiltinTask("push");
  ASSERT_NE(task, nullptr);
  auto expert = task->MakeExpert();
  ASSERT_TRUE(expert.ok()) << expert.status();
  RolloutOptions plain;
  plain.num_episodes = 3;
  plain.num_envs = 3;
  RolloutOptions perturbed = plain;
  perturbed.robustness.obs_noise_std["block"] = 0.005;
  perturbed.robustness.action_noise_std = 0.1;
  perturbed.robustness.action_delay = 1;
  perturbed.robustness.body_mass = {0.8, 1.2};
  perturbed.robustness.actuator_gain = {0.8, 1.2};
  auto base = RunRollout(*task, **expert, plain);
  auto first = RunRollout(*task, **expert, perturbed);
  perturbed.num_envs = 1;
  auto second = RunRollout(*task, **expert, perturbed);
  ASSERT_TRUE(base.ok() && first.ok() && second.ok()) << first.status();
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE((*base)[i].state_hash_chain, (*first)[i].state_hash_chain);
    EXPECT_TRUE((*first)[i].SameOutcome((*second)[i])) << "episode " << i;
  }
}

}  // namespace
}  // namespace roboloop::sim
