#include "eval/leaderboard_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <google/protobuf/util/message_differencer.h>

#include <cmath>
#include <fstream>
#include <thread>

#include "common/fs.h"
#include "common/sqlite.h"
#include "tests/eval/test_evaluations.h"
#include "tests/util/subprocess.h"

namespace roboloop::eval {
namespace {

using ::testing::HasSubstr;
using testing::MakeEvaluation;
using testing::MakeProtocol;

constexpr int64_t kDay = 86400LL * 1000000LL;
constexpr int64_t kJan1 = 1767225600LL * 1000000LL;  // 2026-01-01T00:00:00Z

class LeaderboardStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = roboloop::testing::MakeTempDir("leaderboard");
    store_ = Open();
  }

  std::unique_ptr<LeaderboardStore> Open() {
    LeaderboardStore::Options options;
    options.root = root_;
    auto store = LeaderboardStore::Create(options);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? std::move(*store) : nullptr;
  }

  std::vector<std::string> Checkpoints(const std::vector<v1::Evaluation>& evaluations) {
    std::vector<std::string> ids;
    for (const v1::Evaluation& e : evaluations) ids.push_back(e.checkpoint_id());
    return ids;
  }

  std::string root_;
  std::unique_ptr<LeaderboardStore> store_;
  v1::Protocol protocol_ = MakeProtocol("reacher", 20);
};

TEST_F(LeaderboardStoreTest, RoundTripKeepsEveryFieldAndEpisode) {
  v1::Protocol protocol = protocol_;
  protocol.mutable_execution()->set_batch_invariant(false);
  (*protocol.mutable_robustness()->mutable_obs_noise_std())["qpos"] = 0.1;
  protocol.set_base_seed(0xffffffffffffffffull);
  v1::Evaluation evaluation = MakeEvaluation(protocol, "ckpt-a", "reach", 1, 15, -3.25, kJan1);
  evaluation.mutable_episodes(2)->set_episode_return(0.1 + 0.2);
  evaluation.mutable_episodes(2)->set_end_detail("qacc NaN at step 3");
  evaluation.set_requested_by("alice");
  *evaluation.mutable_aggregates() = *Aggregate(evaluation.episodes());
  ASSERT_TRUE(store_->Store(evaluation).ok());
  EXPECT_TRUE(roboloop::PathExists(root_ + "/eval/leaderboard.db"));
  auto back = store_->Get(evaluation.id());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*back, evaluation))
      << back->DebugString();
  EXPECT_EQ(back->episodes(3).seed(), evaluation.episodes(3).seed());
  EXPECT_EQ(back->episodes(19).final_state_hash(), 19ull << 60);
}

TEST_F(LeaderboardStoreTest, GetUnknownIdIsNotFound) {
  auto missing = store_->Get("no-such-id");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("no-such-id"));
}

TEST_F(LeaderboardStoreTest, CacheHitMissAndForcedRunsKept) {
  auto miss = store_->FindCached(ProtocolHash(protocol_), "ckpt-a");
  ASSERT_TRUE(miss.ok());
  EXPECT_FALSE(miss->has_value());

  v1::Evaluation first = MakeEvaluation(protocol_, "ckpt-a", "reach", 1, 10, 0, kJan1);
  ASSERT_TRUE(store_->Store(first).ok());
  auto hit = store_->FindCached(ProtocolHash(protocol_), "ckpt-a");
  ASSERT_TRUE(hit.ok() && hit->has_value());
  EXPECT_EQ((*hit)->id(), first.id());
  EXPECT_EQ((*hit)->episodes_size(), 20);

  v1::Protocol other = protocol_;
  other.set_seed_start(5000);
  EXPECT_FALSE(store_->FindCached(ProtocolHash(other), "ckpt-a")->has_value());
  EXPECT_FALSE(store_->FindCached(ProtocolHash(protocol_), "ckpt-b")->has_value());

  v1::Evaluation forced = MakeEvaluation(protocol_, "ckpt-a", "reach", 1, 12, 0, kJan1 + kDay);
  forced.set_forced(true);
  ASSERT_TRUE(store_->Store(forced).ok());
  EXPECT_EQ((*store_->FindCached(ProtocolHash(protocol_), "ckpt-a"))->id(), forced.id());
  EXPECT_TRUE(store_->Get(first.id()).ok());
  EXPECT_TRUE(store_->Get(forced.id())->forced());
  EXPECT_EQ(store_->History("reach")->size(), 2u);
}

TEST_F(LeaderboardStoreTest, FailedEvaluationIsStoredWithoutRateAndNeverCached) {
  v1::Evaluation failed = MakeEvaluation(protocol_, "ckpt-a", "reach", 1, 10, 0, kJan1);
  ASSERT_FALSE(store_->Store([&] {
    v1::Evaluation with_rate = failed;
    with_rate.set_status(v1::EVALUATION_FAILED);
    return with_rate;
  }()).ok());
  failed.set_status(v1::EVALUATION_FAILED);
  failed.clear_aggregates();
  failed.mutable_episodes()->DeleteSubrange(5, 15);
  failed.set_failure("sim endpoint lost");
  ASSERT_TRUE(store_->Store(failed).ok());
  auto back = store_->Get(failed.id());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->status(), v1::EVALUATION_FAILED);
  EXPECT_FALSE(back->has_aggregates());
  EXPECT_EQ(back->episodes_size(), 5);
  EXPECT_EQ(back->failure(), "sim endpoint lost");
  EXPECT_FALSE(store_->FindCached(ProtocolHash(protocol_), "ckpt-a")->has_value());
  EXPECT_TRUE(store_->Top({})->empty());
}

TEST_F(LeaderboardStoreTest, RejectsInconsistentEvaluations) {
  v1::Evaluation good = MakeEvaluation(protocol_, "ckpt-a", "reach", 1, 10, 0, kJan1);
  auto rejected = [&](auto mutate) {
    v1::Evaluation copy = good;
    mutate(&copy);
    return store_->Store(copy);
  };
  EXPECT_THAT(rejected([](v1::Evaluation* e) { e->set_protocol_hash("abc"); }).message(),
              HasSubstr("protocol_hash"));
  EXPECT_THAT(rejected([](v1::Evaluation* e) { e->mutable_episodes()->RemoveLast(); }).message(),
              HasSubstr("protocol asks 20"));
  EXPECT_THAT(rejected([](v1::Evaluation* e) { e->clear_aggregates(); }).message(),
              HasSubstr("no aggregates"));
  EXPECT_THAT(rejected([](v1::Evaluation* e) { e->set_status(v1::EVALUATION_RUNNING); }).message(),
              HasSubstr("only completed or failed"));
  EXPECT_FALSE(rejected([](v1::Evaluation* e) { e->set_checkpoint_id(""); }).ok());
  const absl::Status nan_return = rejected([](v1::Evaluation* e) {
    e->set_status(v1::EVALUATION_FAILED);
    e->clear_aggregates();
    e->mutable_episodes(3)->set_episode_return(std::nan(""));
  });
  EXPECT_EQ(nan_return.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(nan_return.message(), HasSubstr("episode 1003 has return nan; a return must be finite"));
  ASSERT_TRUE(store_->Store(good).ok());
  EXPECT_EQ(store_->Store(good).code(), absl::StatusCode::kAlreadyExists);
  // The failed duplicate left nothing behind: still one evaluation, twenty episodes.
  EXPECT_EQ(store_->Get(good.id())->episodes_size(), 20);
  EXPECT_EQ(store_->History("reach")->size(), 1u);
}

TEST_F(LeaderboardStoreTest, TopOrdersByMetricAndKeepsNewestPerCheckpoint) {
  // successes / returns chosen so that the three metrics rank differently.
  ASSERT_TRUE(store_->Store(MakeEvaluation(protocol_, "high-rate", "m", 1, 18, -100, kJan1)).ok());
  ASSERT_TRUE(store_->Store(MakeEvaluation(protocol_, "mid", "m", 2, 14, 0, kJan1)).ok());
  ASSERT_TRUE(store_->Store(MakeEvaluation(protocol_, "high-return", "m", 3, 5, 500, kJan1)).ok());
  LeaderboardQuery query;
  EXPECT_THAT(Checkpoints(*store_->Top(query)),
              ::testing::ElementsAre("high-rate", "mid", "high-return"));
  query.metric = RankMetric::kMeanReturn;
  EXPECT_THAT(Checkpoints(*store_->Top(query)),
              ::testing::ElementsAre("high-return", "mid", "high-rate"));
  query.limit = 1;
  EXPECT_THAT(Checkpoints(*store_->Top(query)), ::testing::ElementsAre("high-return"));
  EXPECT_TRUE(store_->Top(query)->front().episodes().empty());

  // A newer (forced) evaluation of "mid" replaces its older one on the board.
  v1::Evaluation rerun = MakeEvaluation(protocol_, "mid", "m", 2, 20, 0, kJan1 + kDay);
  rerun.set_forced(true);
  ASSERT_TRUE(store_->Store(rerun).ok());
  LeaderboardQuery by_rate;
  by_rate.metric = RankMetric::kSuccessRate;
  auto top = store_->Top(by_rate);
  ASSERT_EQ(top->size(), 3u);
  EXPECT_EQ(top->front().id(), rerun.id());
  query.limit = 0;
  EXPECT_FALSE(store_->Top(query).ok());
}

TEST_F(LeaderboardStoreTest, FiltersByTaskProtocolModelDatasetAliasAndDate) {
  v1::Protocol cartpole = MakeProtocol("cartpole-swingup", 10);
  v1::Evaluation a = MakeEvaluation(protocol_, "a", "alpha", 1, 10, 0, kJan1);
  v1::Evaluation b = MakeEvaluation(protocol_, "b", "beta", 1, 12, 0, kJan1 + 2 * kDay);
  b.add_aliases("champion");
  v1::Evaluation c = MakeEvaluation(cartpole, "c", "alpha", 2, 5, 0, kJan1 + 4 * kDay);
  for (const auto& e : {a, b, c}) ASSERT_TRUE(store_->Store(e).ok());

  auto ids = [&](LeaderboardQuery query) { return Checkpoints(*store_->Top(query)); };
  using ::testing::ElementsAre;
  using ::testing::UnorderedElementsAre;
  EXPECT_THAT(ids({}), UnorderedElementsAre("a", "b", "c"));
  LeaderboardQuery q;
  q.task = "cartpole-swingup";
  EXPECT_THAT(ids(q), ElementsAre("c"));
  q = {};
  q.protocol_hash = ProtocolHash(protocol_);
  EXPECT_THAT(ids(q), ElementsAre("b", "a"));
  q = {};
  q.model = "alpha";
  EXPECT_THAT(ids(q), UnorderedElementsAre("a", "c"));
  q = {};
  q.dataset_id = "dataset-beta";
  EXPECT_THAT(ids(q), ElementsAre("b"));
  q = {};
  q.alias = "champion";
  EXPECT_THAT(ids(q), ElementsAre("b"));
  q.alias = "latest";
  EXPECT_THAT(ids(q), UnorderedElementsAre("a", "b", "c"));
  q = {};
  q.since_unix_us = kJan1 + kDay;
  q.until_unix_us = kJan1 + 3 * kDay;
  EXPECT_THAT(ids(q), ElementsAre("b"));
}

TEST_F(LeaderboardStoreTest, HistoryFollowsModelVersions) {
  ASSERT_TRUE(store_->Store(MakeEvaluation(protocol_, "v2", "m", 2, 10, 0, kJan1)).ok());
  ASSERT_TRUE(store_->Store(MakeEvaluation(protocol_, "v1", "m", 1, 8, 0, kJan1 + kDay)).ok());
  ASSERT_TRUE(store_->Store(MakeEvaluation(protocol_, "x", "other", 1, 8, 0, kJan1)).ok());
  v1::Protocol cartpole = MakeProtocol("cartpole-swingup", 10);
  ASSERT_TRUE(store_->Store(MakeEvaluation(cartpole, "v3", "m", 3, 8, 0, kJan1)).ok());
  EXPECT_THAT(Checkpoints(*store_->History("m")), ::testing::ElementsAre("v1", "v2", "v3"));
  EXPECT_THAT(Checkpoints(*store_->History("m", ProtocolHash(protocol_))),
              ::testing::ElementsAre("v1", "v2"));
  EXPECT_FALSE(store_->History("").ok());
}

TEST_F(LeaderboardStoreTest, ReopenAfterCloseKeepsData) {
  v1::Evaluation evaluation = MakeEvaluation(protocol_, "ckpt-a", "reach", 1, 15, 0, kJan1);
  ASSERT_TRUE(store_->Store(evaluation).ok());
  store_.reset();
  store_ = Open();
  ASSERT_NE(store_, nullptr);
  auto back = store_->Get(evaluation.id());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->episodes_size(), 20);
  EXPECT_EQ((*store_->FindCached(ProtocolHash(protocol_), "ckpt-a"))->id(), evaluation.id());
}

// A database written before evaluations recorded their requester (schema 1) opens, migrates
// and keeps its rows, which read back with an empty requester.
TEST_F(LeaderboardStoreTest, SchemaOneDatabaseMigratesKeepingItsEvaluations) {
  v1::Evaluation evaluation = MakeEvaluation(protocol_, "ckpt-a", "reach", 1, 15, 0, kJan1);
  evaluation.set_requested_by("alice");
  ASSERT_TRUE(store_->Store(evaluation).ok());
  store_.reset();
  {
    auto db = SqliteDb::Open(LeaderboardStore::DatabasePath(root_), 5000);
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE((*db)->Exec("ALTER TABLE evaluations DROP COLUMN requested_by").ok());
    ASSERT_TRUE((*db)->Exec("UPDATE schema_version SET version = 1").ok());
  }
  store_ = Open();
  ASSERT_NE(store_, nullptr);
  auto back = store_->Get(evaluation.id());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->requested_by(), "");
  EXPECT_EQ(back->episodes_size(), 20);
  v1::Evaluation later = MakeEvaluation(protocol_, "ckpt-b", "reach", 1, 16, 0, kJan1 + kDay);
  later.set_requested_by("bob");
  ASSERT_TRUE(store_->Store(later).ok());
  EXPECT_EQ(store_->Get(later.id())->requested_by(), "bob");
}

// Schema 2 stored the Wilson bounds of 0/n and n/n a rounding error off 0 and 1; schema 3 makes
// them exact in the column the leaderboard ranks by and in the stored aggregates.
TEST_F(LeaderboardStoreTest, SchemaTwoWilsonBoundsOfNoneAndAllBecomeExact) {
  const v1::Evaluation none = MakeEvaluation(protocol_, "ckpt-none", "reach", 1, 0, 0, kJan1);
  const v1::Evaluation all = MakeEvaluation(protocol_, "ckpt-all", "reach", 2, 20, 0, kJan1);
  ASSERT_TRUE(store_->Store(none).ok());
  ASSERT_TRUE(store_->Store(all).ok());
  store_.reset();
  {
    auto db = SqliteDb::Open(LeaderboardStore::DatabasePath(root_), 5000);
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE((*db)->Exec("UPDATE evaluations SET success_low = 1.7e-18, aggregates_json = json_set("
                            "aggregates_json, '$.success.interval.low', 1.7e-18) WHERE successes = 0").ok());
    ASSERT_TRUE((*db)->Exec("UPDATE evaluations SET success_high = 0.9999999999999998, aggregates_json = json_set("
                            "aggregates_json, '$.success.interval.high', 0.9999999999999998) WHERE successes = 20")
                    .ok());
    ASSERT_TRUE((*db)->Exec("UPDATE schema_version SET version = 2").ok());
  }
  store_ = Open();
  ASSERT_NE(store_, nullptr);
  auto none_back = store_->Get(none.id());
  ASSERT_TRUE(none_back.ok()) << none_back.status();
  EXPECT_EQ(none_back->aggregates().success().interval().low(), 0.0);
  auto all_back = store_->Get(all.id());
  ASSERT_TRUE(all_back.ok()) << all_back.status();
  EXPECT_EQ(all_back->aggregates().success().interval().high(), 1.0);
  auto db = SqliteDb::Open(LeaderboardStore::DatabasePath(root_), 5000);
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_EQ((*db)->QueryInt("SELECT COUNT(*) FROM evaluations WHERE success_low = 0 AND successes = 0", {}, -1).value(),
            1);
  EXPECT_EQ((*db)->QueryInt("SELECT COUNT(*) FROM evaluations WHERE success_high = 1 AND successes = trials", {}, -1)
                .value(),
            1);
}

TEST_F(LeaderboardStoreTest, TwoConnectionsWriteConcurrently) {
  std::unique_ptr<LeaderboardStore> second = Open();
  ASSERT_NE(second, nullptr);
  auto write = [&](LeaderboardStore* store, const std::string& model) {
    for (int i = 0; i < 10; ++i) {
      absl::Status status =
          store->Store(MakeEvaluation(protocol_, model + std::to_string(i), model, i + 1, i, 0, kJan1 + i));
      EXPECT_TRUE(status.ok()) << status;
    }
  };
  std::thread a(write, store_.get(), "a");
  std::thread b(write, second.get(), "b");
  a.join();
  b.join();
  EXPECT_EQ(store_->History("b")->size(), 10u);
  EXPECT_EQ(second->History("a")->size(), 10u);
}

TEST(LeaderboardStoreOpenTest, BadPathsAreClearErrors) {
  std::string dir = roboloop::testing::MakeTempDir("leaderboard-bad");
  std::string file = dir + "/not-a-dir";
  std::ofstream(file) << "x";
  LeaderboardStore::Options options;
  options.root = file;
  auto under_file = LeaderboardStore::Create(options);
  ASSERT_FALSE(under_file.ok());
  EXPECT_THAT(under_file.status().message(), HasSubstr(file));

  options.root = dir + "/absent";
  options.create_if_missing = false;
  auto absent = LeaderboardStore::Create(options);
  EXPECT_EQ(absent.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(absent.status().message(), HasSubstr("absent/eval/leaderboard.db"));

  options.root = "";
  EXPECT_EQ(LeaderboardStore::Create(options).status().code(), absl::StatusCode::kInvalidArgument);

  std::string garbage_root = dir + "/garbage";
  ASSERT_TRUE(roboloop::MakeDirs(garbage_root + "/eval").ok());
  std::ofstream(LeaderboardStore::DatabasePath(garbage_root)) << std::string(4096, 'g');
  options.root = garbage_root;
  auto garbage = LeaderboardStore::Create(options);
  ASSERT_FALSE(garbage.ok());
  EXPECT_THAT(garbage.status().message(), HasSubstr("leaderboard.db"));
}

}  // namespace
}  // namespace roboloop::eval
