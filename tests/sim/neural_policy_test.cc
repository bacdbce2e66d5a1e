// Neural policies in the rollout loop (issue 4, reqs 6, 7, 10): LoadPolicyFile through the
// torch boundary, deterministic rollouts and spec checks before any stepping.
#include "sim/checkpoint_policy.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/random_policy.h"
#include "sim/rollout.h"
#include "tests/sim/test_tasks.h"
#include "tests/train/policy_test_files.h"

namespace roboloop::sim {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

RolloutOptions Options(int envs, int threads) {
  RolloutOptions options;
  options.base_seed = 21;
  options.num_episodes = 6;
  options.num_envs = envs;
  options.num_threads = threads;
  options.max_steps = 120;
  return options;
}

std::vector<EpisodeRecord> Roll(const Task& task, Policy& policy, const RolloutOptions& options) {
  auto records = RunRollout(task, policy, options);
  EXPECT_TRUE(records.ok()) << records.status();
  return records.ok() ? *records : std::vector<EpisodeRecord>();
}

void ExpectSameOutcomes(const std::vector<EpisodeRecord>& a, const std::vector<EpisodeRecord>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(a[i].SameOutcome(b[i])) << "episode " << a[i].episode_index;
  }
}

// An MLP policy file fitting `task` at `path`.
PolicyFile WriteMlpFor(const Task& task, const std::string& path, uint32_t seed) {
  const std::vector<int64_t> widths = {task.obs_spec().size(), 32, 32, task.action_spec().size()};
  train::testing::WriteMlp(path, widths, seed);
  return {path, {"mlp", nlohmann::json::parse(train::testing::MlpOptionsJson(widths, "tanh"))}};
}

TEST(NeuralPolicyTest, CartpoleBalanceRolloutIsIdenticalFor1And2ThreadsAnd4And16Envs) {
  auto task = testing::BuiltinTask("cartpole-balance");
  const std::string path = roboloop::testing::MakeTempDir("neural") + "/mlp.safetensors";
  auto policy = LoadPolicyFile(WriteMlpFor(*task, path, 3), PolicyRunOptions(), task->obs_spec(),
                               task->action_spec());
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ((*policy)->name(), path);
  const std::vector<EpisodeRecord> one = Roll(*task, **policy, Options(4, 1));
  ASSERT_EQ(one.size(), 6u);
  ExpectSameOutcomes(one, Roll(*task, **policy, Options(4, 2)));
  ExpectSameOutcomes(one, Roll(*task, **policy, Options(16, 2)));
  RandomPolicy random(*task, 3);
  const std::vector<EpisodeRecord> other = Roll(*task, random, Options(4, 1));
  EXPECT_NE(one[0].state_hash_chain, other[0].state_hash_chain);  // the MLP drives the cart
}

TEST(NeuralPolicyTest, APolicyWhoseDimsDoNotFitTheTaskIsRefusedNamingTheFile) {
  auto task = testing::BuiltinTask("cartpole-balance");
  auto reacher = testing::BuiltinTask("reacher");
  const std::string path = roboloop::testing::MakeTempDir("neural") + "/reacher.safetensors";
  const PolicyFile file = WriteMlpFor(*reacher, path, 1);
  auto policy = LoadPolicyFile(file, PolicyRunOptions(), task->obs_spec(), task->action_spec());
  EXPECT_THAT(policy.status().ToString(),
              AllOf(HasSubstr(path), HasSubstr("does not fit the task"), HasSubstr("obs_dim")));
}

TEST(NeuralPolicyTest, AMissingFileIsRefusedNamingIt) {
  auto task = testing::BuiltinTask("cartpole-balance");
  const std::string path = roboloop::testing::MakeTempDir("neural") + "/absent.pt";
  auto policy = LoadPolicyFile({path, {"torchscript", nlohmann::json::object()}}, PolicyRunOptions(),
                               task->obs_spec(), task->action_spec());
  EXPECT_THAT(policy.status().ToString(), AllOf(HasSubstr(path), HasSubstr("no such")));
}

TEST(NeuralPolicyTest, AnUnknownKindOrABadOptionIsRefusedNamingTheFile) {
  auto task = testing::BuiltinTask("cartpole-balance");
  const std::string path = roboloop::testing::MakeTempDir("neural") + "/mlp.safetensors";
  PolicyFile file = WriteMlpFor(*task, path, 1);
  file.policy.kind = "lstm";
  auto unknown = LoadPolicyFile(file, PolicyRunOptions(), task->obs_spec(), task->action_spec());
  EXPECT_THAT(unknown.status().ToString(), AllOf(HasSubstr(path), HasSubstr("unknown policy kind 'lstm'")));
  file.policy.kind = "mlp";
  file.policy.options["activation"] = "swish";
  auto bad = LoadPolicyFile(file, PolicyRunOptions(), task->obs_spec(), task->action_spec());
  EXPECT_THAT(bad.status().ToString(), AllOf(HasSubstr(path), HasSubstr("'activation'"), HasSubstr("swish")));
}

}  // namespace
}  // namespace roboloop::sim
