// TorchScript policies exported at test time by the project environment's torch 2.11 (issue 4,
// req 7; issue 21, req 5): scripted and traced TransformerEncoder policies against Python's
// outputs, batch-invariant mode, a checkpoint's normalization (issue 26, req 1), and files this
// LibTorch cannot load.
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/checkpoint_policy.h"
#include "sim/rollout.h"
#include "tests/sim/test_tasks.h"
#include "tests/train/policy_test_files.h"
#include "tests/util/loaded_torch_runtime.h"
#include "tests/util/subprocess.h"
#include "train/torch_runtime.h"

namespace roboloop::train {
namespace {

using ::roboloop::testing::LoadedTorchRuntime;
using ::roboloop::testing::RandomRows;
using ::testing::AllOf;
using ::testing::HasSubstr;

// TorchScript files exported once per test binary by the project environment's torch.
class TorchScriptPolicyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(roboloop::testing::MakeTempDir("torchscript"));
    testing::ExportPythonPolicies(*dir_);
  }

  static std::string File(const std::string& name) { return *dir_ + "/" + name; }

  static std::string* dir_;
};

std::string* TorchScriptPolicyTest::dir_ = nullptr;

TEST_F(TorchScriptPolicyTest, ScriptedAndTracedTransformerPoliciesMatchPython) {
  const testing::PythonOutputs expected = testing::ReadPythonOutputs(File("expected.txt"));
  const std::pair<const char*, const std::vector<float>*> files[] = {
      {"scripted.pt", &expected.scripted}, {"traced.pt", &expected.traced}};
  for (const auto& [name, reference] : files) {
    auto policy = LoadedTorchRuntime().LoadPolicy(File(name), "torchscript", "{}");
    ASSERT_TRUE(policy.ok()) << policy.status();
    for (bool invariant : {false, true}) {
      std::vector<float> actions(reference->size());
      ASSERT_TRUE((*policy)
                      ->Act(expected.obs.data(), expected.batch, expected.obs_dim, actions.data(),
                            expected.action_dim, invariant)
                      .ok());
      EXPECT_LE(testing::MaxRelativeError(actions, *reference), 1e-5)
          << name << " invariant " << invariant;
    }
  }
}

TEST_F(TorchScriptPolicyTest, BatchInvariantTorchScriptRowIsBitwiseEqualAloneAndInABatch) {
  auto policy = LoadedTorchRuntime().LoadPolicy(File("traced.pt"), "torchscript", "{}");
  ASSERT_TRUE(policy.ok()) << policy.status();
  const std::vector<float> obs = RandomRows(64, 6, 9);
  std::vector<float> batched(64 * 2), alone(2);
  ASSERT_TRUE((*policy)->Act(obs.data(), 64, 6, batched.data(), 2, true).ok());
  for (int row = 0; row < 64; row += 7) {
    ASSERT_TRUE((*policy)->Act(obs.data() + row * 6, 1, 6, alone.data(), 2, true).ok());
    EXPECT_EQ(std::memcmp(alone.data(), batched.data() + row * 2, sizeof(float) * 2), 0);
  }
}

TEST_F(TorchScriptPolicyTest, AFileUsingAnOpThisLibTorchLacksIsRefusedNamingTheOp) {
  auto policy = LoadedTorchRuntime().LoadPolicy(File("missing_op.pt"), "torchscript", "{}");
  EXPECT_THAT(policy.status().ToString(),
              AllOf(HasSubstr(File("missing_op.pt")),
                    HasSubstr("uses op aten::fused_policy_head_from_the_future"), HasSubstr("lacks")));
}

TEST_F(TorchScriptPolicyTest, ATruncatedZipIsRefusedNamingTheFile) {
  const std::string bytes = roboloop::testing::ReadWholeFile(File("scripted.pt"));
  const std::string truncated = File("truncated.pt");
  std::ofstream(truncated) << bytes.substr(0, bytes.size() / 2);
  auto policy = LoadedTorchRuntime().LoadPolicy(truncated, "torchscript", "{}");
  EXPECT_THAT(
      policy.status().ToString(),
      AllOf(HasSubstr(truncated), HasSubstr("not a loadable TorchScript file"), HasSubstr("zip")));
}

TEST_F(TorchScriptPolicyTest, WrongObsDimsAreAnErrorNamingTheFile) {
  auto policy = LoadedTorchRuntime().LoadPolicy(File("scripted.pt"), "torchscript", "{}");
  ASSERT_TRUE(policy.ok()) << policy.status();
  std::vector<float> obs(2 * 5), actions(2 * 2);
  EXPECT_THAT((*policy)->Act(obs.data(), 2, 5, actions.data(), 2, false).ToString(),
              HasSubstr(File("scripted.pt")));
  std::vector<float> good_obs(2 * 6);
  EXPECT_THAT((*policy)->Act(good_obs.data(), 2, 6, actions.data(), 3, false).ToString(),
              AllOf(HasSubstr(File("scripted.pt")), HasSubstr("expected [2, 3]")));
}

TEST_F(TorchScriptPolicyTest, TheCheckpointsNormalizationIsAppliedAroundTheModule) {
  const std::vector<float> obs_mean = {1, 2, 3, 4, 5, 6}, obs_std = {2, 2, 2, 4, 4, 4};
  const std::vector<float> action_mean = {0.5f, -1}, action_std = {3, 10};
  const nlohmann::json normalization = {{"obs", {{"mean", obs_mean}, {"std", obs_std}}},
                                        {"action", {{"mean", action_mean}, {"std", action_std}}}};
  auto plain = LoadedTorchRuntime().LoadPolicy(File("scripted.pt"), "torchscript", "{}");
  auto normalized = LoadedTorchRuntime().LoadPolicy(File("scripted.pt"), "torchscript",
                                         nlohmann::json{{"normalization", normalization}}.dump());
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(normalized.ok()) << normalized.status();
  const std::vector<float> obs = RandomRows(4, 6, 3);
  std::vector<float> scaled(obs.size()), expected(4 * 2), actions(4 * 2);
  for (size_t i = 0; i < obs.size(); ++i) scaled[i] = (obs[i] - obs_mean[i % 6]) / obs_std[i % 6];
  ASSERT_TRUE((*plain)->Act(scaled.data(), 4, 6, expected.data(), 2, true).ok());
  for (size_t i = 0; i < expected.size(); ++i) expected[i] = expected[i] * action_std[i % 2] + action_mean[i % 2];
  ASSERT_TRUE((*normalized)->Act(obs.data(), 4, 6, actions.data(), 2, true).ok());
  EXPECT_LE(testing::MaxRelativeError(actions, expected), 1e-5);
  const nlohmann::json zero_std = {{"obs", {{"mean", {0}}, {"std", {0}}}}, {"action", normalization["action"]}};
  auto bad = LoadedTorchRuntime().LoadPolicy(File("scripted.pt"), "torchscript",
                                  nlohmann::json{{"normalization", zero_std}}.dump());
  EXPECT_THAT(bad.status().ToString(), AllOf(HasSubstr(File("scripted.pt")), HasSubstr("normalization.obs.std")));
}

// The TorchScript file `path` as the one policy loader reads it.
sim::PolicyFile TorchScriptFile(const std::string& path) {
  return {path, {"torchscript", nlohmann::json::object()}};
}

TEST_F(TorchScriptPolicyTest, ANeuralPolicyOfOtherDimsThanTheTaskIsRefusedBeforeStepping) {
  const std::string dir = *dir_;
  auto task = sim::testing::BuiltinTask("cartpole-balance");
  auto policy = sim::LoadPolicyFile(TorchScriptFile(dir + "/traced.pt"), sim::PolicyRunOptions(),
                                      task->obs_spec(), task->action_spec());
  EXPECT_THAT(policy.status().ToString(),
              AllOf(HasSubstr(dir + "/traced.pt"), HasSubstr("does not fit the task")));
  auto missing_op = sim::LoadPolicyFile(TorchScriptFile(dir + "/missing_op.pt"), sim::PolicyRunOptions(),
                                          task->obs_spec(), task->action_spec());
  EXPECT_THAT(
      missing_op.status().ToString(),
      AllOf(HasSubstr(dir + "/missing_op.pt"), HasSubstr("aten::fused_policy_head_from_the_future")));
}

std::vector<sim::EpisodeRecord> Roll(const sim::Task& task, sim::Policy& policy, int envs,
                                     int threads) {
  sim::RolloutOptions options;
  options.base_seed = 4;
  options.num_episodes = 4;
  options.num_envs = envs;
  options.num_threads = threads;
  options.max_steps = 60;
  auto records = sim::RunRollout(task, policy, options);
  EXPECT_TRUE(records.ok()) << records.status();
  return records.ok() ? *records : std::vector<sim::EpisodeRecord>();
}

TEST_F(TorchScriptPolicyTest, ATransformerRolloutIsIdenticalFor1And2ThreadsAnd2And4Envs) {
  auto task = sim::testing::BuiltinTask("cartpole-balance");
  auto policy = sim::LoadPolicyFile(TorchScriptFile(File("cartpole.pt")), sim::PolicyRunOptions(),
                                      task->obs_spec(), task->action_spec());
  ASSERT_TRUE(policy.ok()) << policy.status();
  const std::vector<sim::EpisodeRecord> reference = Roll(*task, **policy, 2, 1);
  ASSERT_EQ(reference.size(), 4u);
  for (const auto& other : {Roll(*task, **policy, 2, 2), Roll(*task, **policy, 4, 1)}) {
    ASSERT_EQ(other.size(), reference.size());
    for (size_t i = 0; i < reference.size(); ++i) {
      EXPECT_TRUE(reference[i].SameOutcome(other[i])) << "episode " << i;
    }
  }
}

}  // namespace
}  // namespace roboloop::train
