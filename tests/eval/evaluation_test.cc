#include "eval/evaluation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include <google/protobuf/util/message_differencer.h>

#include "common/version.h"
#include "eval/protocol.h"
#include "tests/eval/test_evaluations.h"

namespace roboloop::eval {
namespace {

using ::testing::HasSubstr;

TEST(EvaluationTest, ToEpisodeResultKeepsDeterministicFields) {
  v1::EpisodeRecord record;
  record.set_task("reacher");
  record.set_seed(0xffffffffffffffffull);
  record.set_episode_index(7);
  record.set_episode_return(-1.5);
  record.set_length(33);
  record.set_success(true);
  record.set_end_reason("terminated");
  record.set_end_detail("d");
  record.set_wall_time_s(0.25);
  record.set_state_hash_chain(11);
  record.set_final_state_hash(12);
  v1::EpisodeResult result = ToEpisodeResult(record);
  EXPECT_EQ(result.seed(), 0xffffffffffffffffull);
  EXPECT_EQ(result.episode_index(), 7);
  EXPECT_EQ(result.episode_return(), -1.5);
  EXPECT_EQ(result.length(), 33);
  EXPECT_TRUE(result.success());
  EXPECT_EQ(result.end_reason(), "terminated");
  EXPECT_EQ(result.end_detail(), "d");
  EXPECT_EQ(result.state_hash_chain(), 11u);
  EXPECT_EQ(result.final_state_hash(), 12u);
}

class CompleteEvaluationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    evaluation_ = testing::MakeEvaluation(testing::MakeProtocol("reacher", 6, 100), "c", "m", 1, 3, 0, 1);
    expected_ = evaluation_.aggregates();
    evaluation_.clear_aggregates();
    evaluation_.set_status(v1::EVALUATION_RUNNING);
    std::reverse(evaluation_.mutable_episodes()->pointer_begin(), evaluation_.mutable_episodes()->pointer_end());
  }
  v1::Evaluation evaluation_;
  v1::Aggregates expected_;
};

TEST_F(CompleteEvaluationTest, SortsAndAggregatesAFullRange) {
  BootstrapOptions bootstrap;
  bootstrap.resamples = 200;
  ASSERT_TRUE(CompleteEvaluation(bootstrap, &evaluation_).ok());
  EXPECT_EQ(evaluation_.status(), v1::EVALUATION_COMPLETED);
  EXPECT_EQ(evaluation_.episodes(0).episode_index(), 100);
  EXPECT_EQ(evaluation_.aggregates().success().successes(), 3);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(evaluation_.aggregates(), expected_));
}

TEST_F(CompleteEvaluationTest, RefusesPartialOrDuplicatedRanges) {
  v1::Evaluation partial = evaluation_;
  partial.mutable_episodes()->DeleteSubrange(2, 1);
  absl::Status missing = CompleteEvaluation({}, &partial);
  EXPECT_THAT(missing.message(), HasSubstr("missing"));
  EXPECT_FALSE(partial.has_aggregates());

  v1::Evaluation short_run = evaluation_;
  short_run.mutable_episodes()->DeleteSubrange(0, 1);  // the last index after sorting
  EXPECT_THAT(CompleteEvaluation({}, &short_run).message(), HasSubstr("has 5 episodes"));

  v1::Evaluation twice = evaluation_;
  *twice.add_episodes() = twice.episodes(0);
  EXPECT_THAT(CompleteEvaluation({}, &twice).message(), HasSubstr("episode 105 is there twice"));

  v1::Evaluation foreign = evaluation_;
  foreign.mutable_episodes(0)->set_episode_index(99);
  EXPECT_THAT(CompleteEvaluation({}, &foreign).message(), HasSubstr("episode 99 is outside the range"));
  v1::Evaluation beyond = evaluation_;
  beyond.add_episodes()->set_episode_index(106);
  EXPECT_THAT(CompleteEvaluation({}, &beyond).message(), HasSubstr("episode 106 is outside the range"));
}

TEST(FailEvaluationTest, DropsTheRateKeepsEpisodes) {
  v1::Evaluation evaluation = testing::MakeEvaluation(testing::MakeProtocol("reacher", 4), "c", "m", 1, 2, 0, 1);
  FailEvaluation("endpoint lost", &evaluation);
  EXPECT_EQ(evaluation.status(), v1::EVALUATION_FAILED);
  EXPECT_FALSE(evaluation.has_aggregates());
  EXPECT_EQ(evaluation.episodes_size(), 4);
  EXPECT_EQ(evaluation.failure(), "endpoint lost");
}

TEST(ProvenanceTest, NamesThisBuildAndHost) {
  v1::Provenance provenance = ProcessProvenance();
  EXPECT_EQ(provenance.roboloop_version(), Version());
  EXPECT_EQ(provenance.git_sha(), GitSha());
  EXPECT_FALSE(provenance.host().empty());
}

}  // namespace
}  // namespace roboloop::eval
