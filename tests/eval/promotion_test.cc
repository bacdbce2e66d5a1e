// Promotion of the champion (issue 7, req 5): real registry, real checkpoints, a real sim
// service and leaderboard store. The first promotion evaluates for real; the verdict paths use
// stored evaluations (which the service reuses as its cache) with known successes.
#include "eval/promotion.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <memory>
#include <string>

#include "common/grpc_server.h"
#include "common/ids.h"
#include "registry/registry_host.h"
#include "sim/builtin_tasks.h"
#include "sim/sim_grpc_service.h"
#include "sim/sim_service.h"
#include "tests/eval/test_evaluations.h"
#include "tests/util/served_registry.h"
#include "tests/util/subprocess.h"
#include "tests/util/tiny_checkpoint.h"

namespace roboloop::eval {
namespace {

using ::testing::HasSubstr;

class PromotionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new std::string(roboloop::testing::MakeTempDir("promotion") + "/store");
    roboloop::testing::TinyCheckpointOptions options;
    options.root = *root_;
    options.kind = "mlp";
    options.steps = 5;
    first_ = new std::string(roboloop::testing::MakeTinyCheckpoint(options));
    options.steps = 15;
    second_ = new std::string(roboloop::testing::MakeTinyCheckpoint(options));
  }

  void SetUp() override {
    ASSERT_FALSE(first_->empty());
    ASSERT_FALSE(second_->empty());
    dir_ = roboloop::testing::MakeTempDir("promotion-case");
    sim::BuiltinTaskOptions builtin;
    builtin.models_dir = ROBOLOOP_SOURCE_DIR "/configs/tasks/models";
    ASSERT_TRUE(sim::RegisterBuiltins(&tasks_, builtin).ok());
    auto served = roboloop::testing::ServeRegistry(*root_);
    ASSERT_TRUE(served.ok()) << served.status();
    host_ = std::move(served->host);
    registry_ = std::move(served->client);
    sim::SimServiceHandler::Options sim_options;
    sim_options.registry = &tasks_;
    sim_options.checkpoints = registry_.get();
    sim_options.checkpoint_cache_dir = dir_ + "/cache";
    auto sim_handler = sim::SimServiceHandler::Create(sim_options);
    ASSERT_TRUE(sim_handler.ok()) << sim_handler.status();
    sim_handler_ = std::move(sim_handler).value();
    sim_service_ = std::make_unique<sim::SimGrpcService>(sim_handler_.get(), sim::SimGrpcService::Options());
    common::GrpcServerOptions server;
    server.listen_address = "unix:" + dir_ + "/sim.sock";
    auto sim_server = common::GrpcServer::Create(server, {sim_service_.get()});
    ASSERT_TRUE(sim_server.ok()) << sim_server.status();
    sim_server_ = std::move(sim_server).value();
    LeaderboardStore::Options store;
    store.root = dir_ + "/eval-store";
    auto opened = LeaderboardStore::Create(store);
    ASSERT_TRUE(opened.ok()) << opened.status();
    store_ = std::move(opened).value();
    EvalServiceHandler::Options options;
    options.store = store_.get();
    options.registry = registry_.get();
    options.default_sim_endpoints = {sim_server_->target()};
    auto handler = EvalServiceHandler::Create(options);
    ASSERT_TRUE(handler.ok()) << handler.status();
    handler_ = std::move(handler).value();
    protocol_ = testing::MakeProtocol("cartpole-swingup", 12, /*seed_start=*/1000);
    protocol_.set_max_steps(15);
    auto tasks = sim_handler_->ListTasks();
    ASSERT_TRUE(tasks.ok());
    for (const v1::TaskInfo& task : tasks->tasks()) {
      if (task.name() == "cartpole-swingup") protocol_.set_task_definition_hash(task.definition_hash());
    }
  }

  PromotionRequest Request(const std::string& candidate) const {
    PromotionRequest request;
    request.model = "tiny";
    request.protocol = protocol_;
    request.candidate_ref = candidate;
    request.dataset_cache_dir = dir_ + "/datasets";
    return request;
  }

  // Stores an evaluation of `checkpoint` under the protocol with `successes` of 12 episodes.
  void StoreEvaluation(const std::string& checkpoint, int successes) {
    v1::Evaluation e = testing::MakeEvaluation(protocol_, checkpoint, "tiny", 1, successes, 0, NowUnixMicros());
    ASSERT_TRUE(store_->Store(e).ok());
  }

  std::string Champion() {
    auto champion = registry_->GetCheckpoint("tiny@champion");
    return champion.ok() ? champion->id() : "";
  }

  static std::string* root_;
  static std::string* first_;
  static std::string* second_;
  std::string dir_;
  sim::TaskRegistry tasks_;
  std::unique_ptr<registry::RegistryHost> host_;
  std::unique_ptr<registry::RegistryClient> registry_;
  std::unique_ptr<sim::SimServiceHandler> sim_handler_;
  std::unique_ptr<sim::SimGrpcService> sim_service_;
  std::unique_ptr<common::GrpcServer> sim_server_;
  std::unique_ptr<LeaderboardStore> store_;
  std::unique_ptr<EvalServiceHandler> handler_;
  v1::Protocol protocol_;
};

std::string* PromotionTest::root_ = nullptr;
std::string* PromotionTest::first_ = nullptr;
std::string* PromotionTest::second_ = nullptr;

TEST_F(PromotionTest, TheFirstChampionThenOnlyABetterCandidateMovesTheAlias) {
  ASSERT_EQ(Champion(), "");
  auto first = PromoteIfBetter(*handler_, *registry_, Request(*first_));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->promoted);
  EXPECT_EQ(first->candidate.episodes_size(), 12);
  EXPECT_THAT(first->reason, HasSubstr(first->candidate.id()));
  EXPECT_EQ(Champion(), *first_);

  // The second checkpoint succeeds on every episode where the champion fails: better.
  StoreEvaluation(*first_, 0);
  StoreEvaluation(*second_, 12);
  auto better = PromoteIfBetter(*handler_, *registry_, Request("tiny@latest"));
  ASSERT_TRUE(better.ok()) << better.status();
  ASSERT_TRUE(better->comparison.has_value());
  EXPECT_EQ(better->comparison->verdict(), v1::VERDICT_BETTER);
  EXPECT_TRUE(better->promoted);
  EXPECT_EQ(Champion(), *second_);
  v1::AliasHistoryRequest history;
  history.set_model("tiny");
  history.set_alias(kChampionAlias);
  auto events = registry_->AliasHistory(history);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_FALSE(events->events().empty());
  const std::string reason = events->events(events->events_size() - 1).reason();
  EXPECT_THAT(reason, HasSubstr(better->candidate.id()));
  EXPECT_THAT(reason, HasSubstr(better->champion->id()));
  EXPECT_THAT(reason, HasSubstr("better"));

  // The first checkpoint is worse than the new champion: the alias stays.
  auto worse = PromoteIfBetter(*handler_, *registry_, Request(*first_));
  ASSERT_TRUE(worse.ok()) << worse.status();
  EXPECT_FALSE(worse->promoted);
  EXPECT_EQ(worse->comparison->verdict(), v1::VERDICT_WORSE);
  EXPECT_THAT(worse->reason, HasSubstr("worse"));
  EXPECT_EQ(Champion(), *second_);

  // Equal results: no significant difference, the alias stays.
  StoreEvaluation(*first_, 12);
  auto tie = PromoteIfBetter(*handler_, *registry_, Request(*first_));
  ASSERT_TRUE(tie.ok()) << tie.status();
  EXPECT_FALSE(tie->promoted);
  EXPECT_EQ(tie->comparison->verdict(), v1::VERDICT_NO_SIGNIFICANT_DIFFERENCE);
  EXPECT_EQ(Champion(), *second_);
}

TEST_F(PromotionTest, AProtocolOverlappingTheTrainingSeedsIsRefusedNamingBothRanges) {
  PromotionRequest request = Request(*second_);
  request.protocol.set_seed_start(3);
  auto refused = PromoteIfBetter(*handler_, *registry_, request);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_THAT(refused.status().message(), HasSubstr("episodes [3, 15)"));
  EXPECT_THAT(refused.status().message(), HasSubstr("episodes [0, 6)"));
  EXPECT_THAT(refused.status().message(), HasSubstr("dataset demos"));
  LeaderboardQuery query;
  EXPECT_TRUE(store_->Top(query)->empty());
  request.protocol.set_base_seed(7);
  auto other_base = PromoteIfBetter(*handler_, *registry_, request);
  EXPECT_TRUE(other_base.ok()) << other_base.status();
}

TEST_F(PromotionTest, ACandidateOfAnotherModelOrUnknownIsRefused) {
  PromotionRequest request = Request(*second_);
  request.model = "someone-else";
  EXPECT_EQ(PromoteIfBetter(*handler_, *registry_, request).status().code(), absl::StatusCode::kInvalidArgument);
  auto unknown = PromoteIfBetter(*handler_, *registry_, Request("tiny:v99"));
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound) << unknown.status();
  EXPECT_THAT(unknown.status().message(), HasSubstr("tiny:v99"));
}

TEST(PromotionRequestTest, TheServiceAndTheCliReadARequestAlike) {
  v1::PromoteCandidateRequest named;
  named.set_model("m");
  named.set_candidate("m:v2");
  named.set_protocol_name("cartpole-swingup-gate");
  named.add_sim_endpoints("unix:/tmp/sim.sock");
  auto promotion = PromotionRequestFrom(named, ROBOLOOP_SOURCE_DIR "/configs/protocols", "/tmp/cache");
  ASSERT_TRUE(promotion.ok()) << promotion.status();
  EXPECT_EQ(promotion->model, "m");
  EXPECT_EQ(promotion->candidate_ref, "m:v2");
  EXPECT_EQ(promotion->protocol.name(), "cartpole-swingup-gate");
  EXPECT_EQ(promotion->alpha, 0.05);
  EXPECT_EQ(promotion->sim_endpoints, std::vector<std::string>{"unix:/tmp/sim.sock"});
  EXPECT_EQ(promotion->dataset_cache_dir, "/tmp/cache");

  v1::PromoteCandidateRequest inline_protocol = named;
  inline_protocol.mutable_protocol()->set_name("inline");
  inline_protocol.set_alpha(0.01);
  auto given = PromotionRequestFrom(inline_protocol, "/nonexistent", "");
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_EQ(given->protocol.name(), "inline");
  EXPECT_EQ(given->alpha, 0.01);

  for (double alpha : {-1.0, 1.0, 1e-9, std::nan(""), std::numeric_limits<double>::infinity()}) {
    inline_protocol.set_alpha(alpha);
    auto refused = PromotionRequestFrom(inline_protocol, "/nonexistent", "");
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << alpha;
    EXPECT_THAT(refused.status().message(), ::testing::HasSubstr("promotion: alpha must be in [0.0001, 1)")) << alpha;
  }

  named.set_protocol_name("no-such-protocol");
  EXPECT_THAT(PromotionRequestFrom(named, ROBOLOOP_SOURCE_DIR "/configs/protocols", "").status().message(),
              ::testing::HasSubstr("no-such-protocol"));
}

}  // namespace
}  // namespace roboloop::eval
