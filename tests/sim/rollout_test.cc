// The env pool / rollout engine: determinism across threads, env counts and seed-range
// sharding (issue 4, req 6), auto-reset and the policy boundary (reqs 5, 10).
#include <algorithm>
#include <atomic>
#include <map>
#include <vector>

#include "gtest/gtest.h"
#include "sim/random_policy.h"
#include "sim/rollout.h"
#include "tests/sim/test_tasks.h"

namespace roboloop::sim {
namespace {

std::vector<EpisodeRecord> Roll(const Task& task, Policy& policy, RolloutOptions options) {
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

RolloutOptions Options(int64_t episodes, int envs, int threads) {
  RolloutOptions options;
  options.base_seed = 7;
  options.num_episodes = episodes;
  options.num_envs = envs;
  options.num_threads = threads;
  return options;
}

TEST(RolloutTest, RunsEveryEpisodeOnceWithAutoReset) {
  auto task = testing::BuiltinTask("cartpole-swingup");
  RandomPolicy policy(*task, 1);
  const auto records = Roll(*task, policy, Options(10, 3, 1));
  ASSERT_EQ(records.size(), 10u);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(records[i].episode_index, i);
    EXPECT_EQ(records[i].seed, EpisodeSeed(7, i));
    EXPECT_EQ(records[i].length, 500);
    EXPECT_EQ(records[i].end_reason, EndReason::kTruncated);
    EXPECT_EQ(records[i].task, "cartpole-swingup");
  }
  EXPECT_NE(records[0].state_hash_chain, records[1].state_hash_chain);
}

TEST(RolloutTest, HumanoidRandomPolicyIsBitwiseIdenticalFor1And2Threads) {
  auto task = testing::BuiltinTask("humanoid-stand");
  RandomPolicy policy(*task, 3);
  RolloutOptions one = Options(4, 4, 1), two = Options(4, 4, 2);
  one.max_steps = two.max_steps = 60;
  ExpectSameOutcomes(Roll(*task, policy, one), Roll(*task, policy, two));
}

TEST(RolloutTest, ExpertAndRandomAreIdenticalFor4And16EnvsAndAnySharding) {
  auto task = testing::BuiltinTask("reacher");
  auto expert = task->MakeExpert();
  ASSERT_TRUE(expert.ok());
  RandomPolicy random(*task, 5);
  for (Policy* policy : {expert->get(), static_cast<Policy*>(&random)}) {
    const auto four = Roll(*task, *policy, Options(24, 4, 2));
    ExpectSameOutcomes(four, Roll(*task, *policy, Options(24, 16, 1)));
    RolloutOptions first = Options(10, 3, 2), rest = Options(14, 5, 1);
    rest.first_episode = 10;
    auto sharded = Roll(*task, *policy, first);
    for (const EpisodeRecord& r : Roll(*task, *policy, rest)) sharded.push_back(r);
    ExpectSameOutcomes(four, sharded);
  }
}

// Records the batch sizes it is called with and the episodes it is told have ended, and
// checks that an episode's rows arrive step after step.
class RecordingPolicy : public Policy {
 public:
  explicit RecordingPolicy(Policy* inner) : inner_(inner) {}
  std::string name() const override { return inner_->name(); }
  const ObsSpec& obs_spec() const override { return inner_->obs_spec(); }
  const ActionSpec& action_spec() const override { return inner_->action_spec(); }
  absl::Status Act(const PolicyBatch& batch, float* actions) override {
    batch_sizes.push_back(batch.batch);
    for (int row = 0; row < batch.batch; ++row) {
      int32_t& next = next_step[batch.episode_index[row]];
      if (batch.step[row] != next) return absl::InternalError("a step was skipped");
      ++next;
    }
    return inner_->Act(batch, actions);
  }
  void EndEpisode(int64_t episode_index) override { ended.push_back(episode_index); }

  std::vector<int> batch_sizes;
  std::vector<int64_t> ended;
  std::map<int64_t, int32_t> next_step;

 private:
  Policy* inner_;
};

TEST(RolloutTest, OverlappedHalvesGiveTheSameEpisodesAsOneBatch) {
  auto task = testing::BuiltinTask("reacher");
  RandomPolicy random(*task, 9);
  RecordingPolicy overlapped(&random), serial(&random);
  RolloutOptions options = Options(20, 8, 2);
  options.max_steps = 30;
  options.overlap_inference = true;
  const auto halves = Roll(*task, overlapped, options);
  options.overlap_inference = false;
  const auto whole = Roll(*task, serial, options);
  ExpectSameOutcomes(halves, whole);
  // Two halves of 4 envs take turns; one batch holds all 8 until envs drop out.
  ASSERT_FALSE(overlapped.batch_sizes.empty());
  EXPECT_EQ(overlapped.batch_sizes.front(), 4);
  EXPECT_EQ(serial.batch_sizes.front(), 8);
  EXPECT_GT(overlapped.batch_sizes.size(), serial.batch_sizes.size());
  for (RecordingPolicy* policy : {&overlapped, &serial}) {
    std::vector<int64_t> ended = policy->ended;
    std::sort(ended.begin(), ended.end());
    ASSERT_EQ(ended.size(), 20u);
    for (int64_t i = 0; i < 20; ++i) EXPECT_EQ(ended[i], i);
  }
}

TEST(RolloutTest, DifferentBaseSeedsGiveDifferentEpisodes) {
  auto task = testing::BuiltinTask("pendulum-swingup");
  RandomPolicy policy(*task, 5);
  RolloutOptions other = Options(2, 2, 1);
  other.base_seed = 8;
  const auto a = Roll(*task, policy, Options(2, 2, 1));
  const auto b = Roll(*task, policy, other);
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_NE(a[0].state_hash_chain, b[0].state_hash_chain);
}

TEST(RolloutTest, RefusesAPolicyForAnotherTaskBeforeStepping) {
  auto cartpole = testing::BuiltinTask("cartpole-balance");
  auto reacher = testing::BuiltinTask("reacher");
  RandomPolicy wrong(*reacher, 1);
  auto records = RunRollout(*cartpole, wrong, Options(2, 1, 1));
  EXPECT_EQ(records.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(records.status().message().find("observation spec"), std::string::npos);
}

TEST(RolloutTest, CancellationStopsTheRollout) {
  auto task = testing::BuiltinTask("cartpole-swingup");
  RandomPolicy policy(*task, 1);
  common::CancellationToken cancel;
  cancel.Cancel();
  RolloutOptions options = Options(1000, 4, 2);
  options.cancel = &cancel;
  EXPECT_EQ(RunRollout(*task, policy, options).status().code(), absl::StatusCode::kCancelled);
}

// Records the first episode's trajectory.
class TrajectorySink : public EpisodeSink {
 public:
  absl::Status OnEpisode(const EpisodeRecord& record, const Trajectory* trajectory) override {
    if (trajectory == nullptr) return absl::InternalError("no trajectory");
    records.push_back(record);
    trajectories.push_back(*trajectory);
    return absl::OkStatus();
  }
  std::vector<EpisodeRecord> records;
  std::vector<Trajectory> trajectories;
};

TEST(RolloutTest, RecordedTrajectoriesHaveOneRowPerStep) {
  auto task = testing::BuiltinTask("reacher");
  auto expert = task->MakeExpert();
  ASSERT_TRUE(expert.ok());
  RolloutOptions options = Options(2, 2, 1);
  options.record_trajectories = true;
  auto engine = RolloutEngine::Create(task.get(), options);
  ASSERT_TRUE(engine.ok());
  TrajectorySink sink;
  ASSERT_TRUE((*engine)->Run(**expert, sink).ok());
  ASSERT_EQ(sink.trajectories.size(), 2u);
  const Trajectory& t = sink.trajectories[0];
  const size_t steps = sink.records[0].length;
  EXPECT_EQ(t.obs.size(), steps * task->obs_spec().size());
  EXPECT_EQ(t.actions.size(), steps * task->action_spec().size());
  EXPECT_EQ(t.rewards.size(), steps);
  EXPECT_EQ(t.dones.back(), 1);
  EXPECT_EQ(t.final_obs.size(), static_cast<size_t>(task->obs_spec().size()));
  double total = 0;
  for (float r : t.rewards) total += r;
  EXPECT_NEAR(total, sink.records[0].episode_return, 1e-3);
}

}  // namespace
}  // namespace roboloop::sim
