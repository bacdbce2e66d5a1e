// Replay (issue 4, req 6): a recorded episode re-runs bit for bit; a tampered record or the
// wrong replay options are reported with the field at fault.
#include "sim/replay.h"

#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/random_policy.h"
#include "tests/sim/test_tasks.h"

namespace roboloop::sim {
namespace {

using ::testing::HasSubstr;

RolloutOptions RecordingOptions() {
  RolloutOptions options;
  options.base_seed = 11;
  options.first_episode = 3;
  options.num_episodes = 6;
  options.num_envs = 4;
  options.num_threads = 2;
  options.robustness.action_noise_std = 0.05;
  options.robustness.body_mass = {0.9, 1.1};
  return options;
}

std::vector<EpisodeRecord> Record(const Task& task, Policy& policy) {
  auto records = RunRollout(task, policy, RecordingOptions());
  EXPECT_TRUE(records.ok()) << records.status();
  return records.ok() ? *records : std::vector<EpisodeRecord>();
}

TEST(ReplayTest, ReplaysEveryRecordedExpertEpisodeBitForBit) {
  auto task = testing::BuiltinTask("reacher");
  auto expert = task->MakeExpert();
  ASSERT_TRUE(expert.ok()) << expert.status();
  const auto records = Record(*task, **expert);
  ASSERT_EQ(records.size(), 6u);
  for (const EpisodeRecord& record : records) {
    EXPECT_TRUE(ReplayEpisode(*task, **expert, RecordingOptions(), record).ok())
        << "episode " << record.episode_index;
  }
}

TEST(ReplayTest, TamperedHashChainIsDataLossNamingTheField) {
  auto task = testing::BuiltinTask("cartpole-swingup");
  RandomPolicy policy(*task, 5);
  auto records = Record(*task, policy);
  ASSERT_FALSE(records.empty());
  EpisodeRecord tampered = records[2];
  tampered.state_hash_chain ^= 1;
  absl::Status status = ReplayEpisode(*task, policy, RecordingOptions(), tampered);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("state_hash_chain"));
  EXPECT_THAT(status.message(), HasSubstr("episode 5"));
}

TEST(ReplayTest, DifferentRobustnessOptionsDoNotReplay) {
  auto task = testing::BuiltinTask("cartpole-swingup");
  RandomPolicy policy(*task, 5);
  auto records = Record(*task, policy);
  ASSERT_FALSE(records.empty());
  RolloutOptions other = RecordingOptions();
  other.robustness.action_noise_std = 0.06;
  absl::Status status = ReplayEpisode(*task, policy, other, records[0]);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
}

TEST(ReplayTest, WrongBaseSeedIsRefusedBeforeRunning) {
  auto task = testing::BuiltinTask("cartpole-swingup");
  RandomPolicy policy(*task, 5);
  auto records = Record(*task, policy);
  ASSERT_FALSE(records.empty());
  RolloutOptions other = RecordingOptions();
  other.base_seed = 12;
  absl::Status status = ReplayEpisode(*task, policy, other, records[0]);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("base seed 12"));
}

TEST(ReplayTest, RecordOfAnotherTaskIsRefused) {
  auto task = testing::BuiltinTask("cartpole-swingup");
  RandomPolicy policy(*task, 5);
  auto records = Record(*task, policy);
  ASSERT_FALSE(records.empty());
  EpisodeRecord other = records[0];
  other.task = "reacher";
  absl::Status status = ReplayEpisode(*task, policy, RecordingOptions(), other);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("reacher"));
}

}  // namespace
}  // namespace roboloop::sim
