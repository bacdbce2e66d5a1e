// Each built-in task's scripted expert reaches >= 98 % success over 200 seeded episodes
// (issue 4, req 3), and a do-nothing policy does not, so the success checks can fail.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/sim/test_tasks.h"

namespace roboloop::sim {
namespace {

// Outputs zeros: the baseline that must fail the swing-up tasks.
class ZeroPolicy : public Policy {
 public:
  explicit ZeroPolicy(const Task& task) : obs_(task.obs_spec()), action_(task.action_spec()) {}
  std::string name() const override { return "zero"; }
  const ObsSpec& obs_spec() const override { return obs_; }
  const ActionSpec& action_spec() const override { return action_; }
  absl::Status Act(const PolicyBatch& batch, float* actions) override {
    for (int i = 0; i < batch.batch * action_.size(); ++i) actions[i] = 0.0f;
    return absl::OkStatus();
  }

 private:
  ObsSpec obs_;
  ActionSpec action_;
};

int CountSuccesses(const Task& task, Policy& policy, int episodes) {
  auto env = Env::Create(&task, EnvOptions());
  EXPECT_TRUE(env.ok()) << env.status();
  int successes = 0;
  for (int i = 0; i < episodes; ++i) {
    testing::RunEpisode(**env, policy, /*base_seed=*/2024, i);
    successes += (*env)->success() ? 1 : 0;
  }
  return successes;
}

class ExpertTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ExpertTest, ExpertSucceedsInAtLeast98PercentOf200Episodes) {
  auto task = testing::BuiltinTask(GetParam());
  ASSERT_NE(task, nullptr);
  auto expert = task->MakeExpert();
  ASSERT_TRUE(expert.ok()) << expert.status();
  const int successes = CountSuccesses(*task, **expert, 200);
  EXPECT_GE(successes, 196) << GetParam() << ": " << successes << "/200";
}

TEST_P(ExpertTest, DoingNothingFails) {
  auto task = testing::BuiltinTask(GetParam());
  ASSERT_NE(task, nullptr);
  ZeroPolicy zero(*task);
  EXPECT_LT(CountSuccesses(*task, zero, 20), 10) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Builtins, ExpertTest,
                         ::testing::Values("cartpole-balance", "cartpole-swingup",
                                           "pendulum-swingup", "reacher", "push", "reach-vision"));

}  // namespace
}  // namespace roboloop::sim
