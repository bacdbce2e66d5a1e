// EvalService (issue 7, req 4 and 8): a real trained checkpoint evaluated on two SimService
// endpoints (in-process handlers behind real gRPC servers on unix sockets), one of them shut
// down mid-evaluation, with a result identical to a one-endpoint run; caching and forcing;
// failed evaluations stored without a rate; bad input refused before any rollout; the gRPC
// adapter and client with Leaderboard and Compare.
#include "eval/eval_service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "common/grpc_server.h"
#include "common/sha256.h"
#include "eval/eval_client.h"
#include "eval/eval_grpc_service.h"
#include "registry/registry_host.h"
#include "sim/builtin_tasks.h"
#include "sim/sim_grpc_service.h"
#include "sim/sim_service.h"
#include "tests/util/served_registry.h"
#include "tests/util/subprocess.h"
#include "tests/util/tiny_checkpoint.h"

namespace roboloop::eval {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The user the handler-level evaluations below are recorded for.
constexpr char kRequester[] = "handler-test-user";

// One SimService: handler, adapter and a gRPC server on a unix socket.
struct SimEndpoint {
  std::unique_ptr<sim::SimServiceHandler> handler;
  std::unique_ptr<sim::SimGrpcService> service;
  std::unique_ptr<common::GrpcServer> server;
};

class EvalServiceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new std::string(roboloop::testing::MakeTempDir("eval-service") + "/store");
    roboloop::testing::TinyCheckpointOptions options;
    options.root = *root_;
    options.kind = "mlp";
    checkpoint_ = new std::string(roboloop::testing::MakeTinyCheckpoint(options));
  }

  void SetUp() override {
    ASSERT_FALSE(checkpoint_->empty());
    dir_ = roboloop::testing::MakeTempDir("eval-service-case");
    sim::BuiltinTaskOptions builtin;
    builtin.models_dir = ROBOLOOP_SOURCE_DIR "/configs/tasks/models";
    ASSERT_TRUE(sim::RegisterBuiltins(&tasks_, builtin).ok());
    auto served = roboloop::testing::ServeRegistry(*root_);
    ASSERT_TRUE(served.ok()) << served.status();
    host_ = std::move(served->host);
    registry_ = std::move(served->client);
    for (const char* name : {"a", "b"}) StartSim(name);
    LeaderboardStore::Options store;
    store.root = dir_ + "/eval-store";
    auto opened = LeaderboardStore::Create(store);
    ASSERT_TRUE(opened.ok()) << opened.status();
    store_ = std::move(opened).value();
    ASSERT_EQ(std::system(("mkdir -p " + dir_ + "/protocols").c_str()), 0);
    std::ofstream(dir_ + "/protocols/swing.yaml")
        << "task: cartpole-swingup\nbase_seed: 3\nseed_start: 500\nepisodes: 12\nmax_steps: 30\n"
           "execution: {chunk: {mode: RECEDING_HORIZON, receding_steps: 2}}\n";
    EvalServiceHandler::Options options;
    options.store = store_.get();
    options.registry = registry_.get();
    options.protocols_dir = dir_ + "/protocols";
    options.shards_per_endpoint = 3;
    options.envs = 2;
    auto handler = EvalServiceHandler::Create(options);
    ASSERT_TRUE(handler.ok()) << handler.status();
    handler_ = std::move(handler).value();
  }

  void StartSim(const std::string& name) {
    SimEndpoint endpoint;
    sim::SimServiceHandler::Options options;
    options.registry = &tasks_;
    options.checkpoints = registry_.get();
    options.checkpoint_cache_dir = dir_ + "/cache-" + name;
    auto handler = sim::SimServiceHandler::Create(options);
    ASSERT_TRUE(handler.ok()) << handler.status();
    endpoint.handler = std::move(handler).value();
    endpoint.service = std::make_unique<sim::SimGrpcService>(endpoint.handler.get(), sim::SimGrpcService::Options());
    common::GrpcServerOptions server;
    server.listen_address = "unix:" + dir_ + "/sim-" + name + ".sock";
    server.shutdown_deadline = absl::ZeroDuration();
    auto started = common::GrpcServer::Create(server, {endpoint.service.get()});
    ASSERT_TRUE(started.ok()) << started.status();
    endpoint.server = std::move(started).value();
    sims_.push_back(std::move(endpoint));
  }

  v1::EvaluateRequest Request(const std::vector<int>& endpoints, bool force = false) const {
    v1::EvaluateRequest request;
    request.set_checkpoint_ref("tiny@latest");
    request.set_protocol_name("swing");
    for (int i : endpoints) request.add_sim_endpoints(sims_[i].server->target());
    request.set_force(force);
    return request;
  }

  static std::string Results(const v1::Evaluation& e) {
    v1::Evaluation results;
    *results.mutable_episodes() = e.episodes();
    *results.mutable_aggregates() = e.aggregates();
    return results.SerializeAsString();
  }

  static std::string* root_;
  static std::string* checkpoint_;
  std::string dir_;
  sim::TaskRegistry tasks_;
  std::unique_ptr<registry::RegistryHost> host_;
  std::unique_ptr<registry::RegistryClient> registry_;
  std::vector<SimEndpoint> sims_;
  std::unique_ptr<LeaderboardStore> store_;
  std::unique_ptr<EvalServiceHandler> handler_;
};

std::string* EvalServiceTest::root_ = nullptr;
std::string* EvalServiceTest::checkpoint_ = nullptr;

TEST_F(EvalServiceTest, KillingOneOfTwoEndpointsMidEvaluationGivesTheOneEndpointResult) {
  auto single = handler_->Evaluate(Request({0}), kRequester, {}, nullptr);
  ASSERT_TRUE(single.ok()) << single.status();
  ASSERT_EQ(single->status(), v1::EVALUATION_COMPLETED);
  ASSERT_EQ(single->episodes_size(), 12);
  EXPECT_EQ(single->checkpoint_id(), *checkpoint_);
  EXPECT_EQ(single->requested_by(), kRequester);
  std::thread killer;
  int64_t last_done = 0;
  auto kill_b_once = [&](const v1::EvaluateProgress& progress) {
    if (!killer.joinable()) killer = std::thread([this] { sims_[1].server->Shutdown(absl::ZeroDuration()); });
    last_done = progress.episodes_done();
    return absl::OkStatus();
  };
  auto sharded = handler_->Evaluate(Request({0, 1}, /*force=*/true), kRequester, kill_b_once, nullptr);
  killer.join();
  ASSERT_TRUE(sharded.ok()) << sharded.status();
  EXPECT_GE(handler_->redispatched_shards(), 1);
  EXPECT_TRUE(sharded->forced());
  EXPECT_NE(sharded->id(), single->id());
  EXPECT_EQ(Results(*sharded), Results(*single));
  EXPECT_EQ(last_done, 12);
  EXPECT_THAT(sharded->provenance().libraries().at("mujoco"), HasSubstr("3."));
  EXPECT_FALSE(sharded->provenance().libraries().at("libtorch").empty());
  auto stored = store_->Get(sharded->id());
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(Results(*stored), Results(*single));
}

TEST_F(EvalServiceTest, ACachedEvaluationIsReusedUnlessForced) {
  auto first = handler_->Evaluate(Request({0, 1}), kRequester, {}, nullptr);
  ASSERT_TRUE(first.ok()) << first.status();
  bool cached = false;
  auto again = handler_->Evaluate(Request({0, 1}), kRequester, [&](const v1::EvaluateProgress& p) {
    cached = p.cached();
    return absl::OkStatus();
  }, nullptr);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(cached);
  EXPECT_EQ(again->id(), first->id());
  auto forced = handler_->Evaluate(Request({1}, /*force=*/true), kRequester, {}, nullptr);
  ASSERT_TRUE(forced.ok()) << forced.status();
  EXPECT_NE(forced->id(), first->id());
  EXPECT_EQ(Results(*forced), Results(*first));
}

// A service started with its endpoints dials only those: a request naming another is refused
// before anything is dialed (its sim token would go to an address the caller chose).
TEST_F(EvalServiceTest, AServiceWithItsOwnEndpointsDialsNoOtherARequestNames) {
  EvalServiceHandler::Options options;
  options.store = store_.get();
  options.registry = registry_.get();
  options.protocols_dir = dir_ + "/protocols";
  options.default_sim_endpoints = {sims_[0].server->target()};
  auto pinned = EvalServiceHandler::Create(options);
  ASSERT_TRUE(pinned.ok()) << pinned.status();
  auto refused = (*pinned)->Evaluate(Request({0, 1}), kRequester, {}, nullptr);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied) << refused.status();
  EXPECT_THAT(refused.status().message(), HasSubstr(sims_[1].server->target()));
  EXPECT_THAT(refused.status().message(), Not(HasSubstr("stored as failed")));
  auto own = (*pinned)->Evaluate(Request({0}), kRequester, {}, nullptr);
  EXPECT_TRUE(own.ok()) << own.status();
  auto by_default = (*pinned)->Evaluate(Request({}, /*force=*/true), kRequester, {}, nullptr);
  EXPECT_TRUE(by_default.ok()) << by_default.status();
}

TEST_F(EvalServiceTest, AnEvaluationWhoseEndpointsAllFailIsStoredFailedWithoutARate) {
  std::thread killer;
  auto kill_a = [&](const v1::EvaluateProgress&) {
    if (!killer.joinable()) killer = std::thread([this] { sims_[0].server->Shutdown(absl::ZeroDuration()); });
    return absl::OkStatus();
  };
  auto failed = handler_->Evaluate(Request({0}), kRequester, kill_a, nullptr);
  killer.join();
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable) << failed.status();
  std::smatch id;
  const std::string message(failed.status().message());
  ASSERT_TRUE(std::regex_search(message, id, std::regex("evaluation ([0-9a-f-]{36}) failed"))) << message;
  auto stored = store_->Get(id[1].str());
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->status(), v1::EVALUATION_FAILED);
  EXPECT_FALSE(stored->has_aggregates());
  EXPECT_THAT(stored->failure(), HasSubstr("every sim endpoint failed"));
}

TEST_F(EvalServiceTest, ACancelledEvaluationStopsAndIsStoredFailed) {
  common::CancellationToken cancel;
  auto cancel_at_first = [&](const v1::EvaluateProgress&) {
    cancel.Cancel();
    return absl::OkStatus();
  };
  auto cancelled = handler_->Evaluate(Request({0, 1}), kRequester, cancel_at_first, &cancel);
  ASSERT_EQ(cancelled.status().code(), absl::StatusCode::kCancelled) << cancelled.status();
  std::smatch id;
  const std::string message(cancelled.status().message());
  ASSERT_TRUE(std::regex_search(message, id, std::regex("evaluation ([0-9a-f-]{36}) failed"))) << message;
  auto stored = store_->Get(id[1].str());
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->status(), v1::EVALUATION_FAILED);
  EXPECT_LT(stored->episodes_size(), 12);
  EXPECT_EQ(handler_->redispatched_shards(), 0);
}

TEST_F(EvalServiceTest, BadInputIsRefusedBeforeAnyRollout) {
  struct Case {
    v1::EvaluateRequest request;
    absl::StatusCode code;
    std::string message;
  };
  std::vector<Case> cases;
  Case unknown_protocol{Request({0}), absl::StatusCode::kNotFound, "no-such-protocol"};
  unknown_protocol.request.set_protocol_name("no-such-protocol");
  cases.push_back(unknown_protocol);
  v1::Protocol inline_protocol;
  inline_protocol.set_task("no-such-task");
  inline_protocol.set_episodes(4);
  inline_protocol.set_max_steps(10);
  inline_protocol.mutable_execution()->mutable_chunk()->set_mode(v1::ChunkExecution::FULL_CHUNK);
  Case unknown_task{Request({0}), absl::StatusCode::kInvalidArgument, "cartpole-swingup"};
  *unknown_task.request.mutable_protocol() = inline_protocol;
  cases.push_back(unknown_task);
  Case zero_episodes{Request({0}), absl::StatusCode::kInvalidArgument, "episodes"};
  inline_protocol.set_task("cartpole-swingup");
  inline_protocol.set_episodes(0);
  *zero_episodes.request.mutable_protocol() = inline_protocol;
  cases.push_back(zero_episodes);
  Case wrong_task{Request({0}), absl::StatusCode::kInvalidArgument, "does not fit the task"};
  inline_protocol.set_task("reacher");
  inline_protocol.set_episodes(4);
  *wrong_task.request.mutable_protocol() = inline_protocol;
  cases.push_back(wrong_task);
  Case long_horizon{Request({0}), absl::StatusCode::kInvalidArgument, "predicts chunks of 4"};
  inline_protocol.set_task("cartpole-swingup");
  inline_protocol.mutable_execution()->mutable_chunk()->set_mode(v1::ChunkExecution::RECEDING_HORIZON);
  inline_protocol.mutable_execution()->mutable_chunk()->set_receding_steps(6);
  *long_horizon.request.mutable_protocol() = inline_protocol;
  cases.push_back(long_horizon);
  // QA: a negative noise std was found only by the rollout, and stored a failed evaluation.
  Case bad_robustness{Request({0}), absl::StatusCode::kInvalidArgument,
                      "protocol 'noisy' on task cartpole-swingup: robustness option action_noise_std must be >= 0"};
  inline_protocol.set_name("noisy");
  inline_protocol.mutable_execution()->mutable_chunk()->set_mode(v1::ChunkExecution::FULL_CHUNK);
  inline_protocol.mutable_robustness()->set_action_noise_std(-1.0);
  *bad_robustness.request.mutable_protocol() = inline_protocol;
  cases.push_back(bad_robustness);
  Case unknown_checkpoint{Request({0}), absl::StatusCode::kNotFound, "nobody@latest"};
  unknown_checkpoint.request.set_checkpoint_ref("nobody@latest");
  cases.push_back(unknown_checkpoint);
  cases.push_back({Request({}), absl::StatusCode::kInvalidArgument, "sim endpoint"});
  // A file path as protocol_name would let a caller read any YAML file of the server's, here a
  // valid protocol: refused, as is a name that is a file name of the protocols directory.
  for (const std::string& path : {std::string(ROBOLOOP_SOURCE_DIR "/configs/protocols/cartpole-swingup-gate.yaml"),
                                  std::string("swing.yaml"), std::string("../protocols/swing")}) {
    Case file_path{Request({0}), absl::StatusCode::kInvalidArgument, "is a file path"};
    file_path.request.set_protocol_name(path);
    cases.push_back(file_path);
  }
  for (const Case& c : cases) {
    auto evaluation = handler_->Evaluate(c.request, kRequester, {}, nullptr);
    EXPECT_EQ(evaluation.status().code(), c.code) << c.message << ": " << evaluation.status();
    EXPECT_THAT(evaluation.status().message(), HasSubstr(c.message));
    EXPECT_THAT(evaluation.status().message(), Not(HasSubstr("stored as failed")));
  }
  EXPECT_EQ(sims_[0].handler->active_rollouts(), 0);
}

TEST_F(EvalServiceTest, TheGrpcServiceEvaluatesStreamsProgressAndAnswersQueries) {
  EvalGrpcService service(handler_.get(), EvalGrpcService::Options());
  common::GrpcServerOptions options;
  options.listen_address = "unix:" + dir_ + "/eval.sock";
  options.tokens_file = dir_ + "/tokens.yaml";
  std::ofstream(options.tokens_file) << "tokens:\n  - {name: ci-bot, sha256: " << Sha256Hex("bot-token")
                                     << ", role: admin}\n";
  auto server = common::GrpcServer::Create(options, {&service});
  ASSERT_TRUE(server.ok()) << server.status();
  common::GrpcChannelOptions channel;
  channel.target = (*server)->target();
  channel.token = "bot-token";
  auto client = EvalClient::Connect(channel);
  ASSERT_TRUE(client.ok()) << client.status();
  std::vector<int64_t> done;
  auto evaluation = (*client)->Evaluate(Request({0, 1}), [&](const v1::EvaluateProgress& p) {
    done.push_back(p.episodes_done());
    return absl::OkStatus();
  });
  ASSERT_TRUE(evaluation.ok()) << evaluation.status();
  EXPECT_EQ(evaluation->episodes_size(), 12);
  ASSERT_FALSE(done.empty());
  EXPECT_EQ(done.back(), 12);
  v1::LeaderboardRequest top;
  top.set_task("cartpole-swingup");
  auto board = (*client)->Leaderboard(top);
  ASSERT_TRUE(board.ok()) << board.status();
  ASSERT_EQ(board->evaluations_size(), 1);
  EXPECT_EQ(board->evaluations(0).id(), evaluation->id());
  EXPECT_EQ(board->evaluations(0).requested_by(), "ci-bot");
  v1::CompareRequest compare;
  compare.set_candidate(evaluation->checkpoint_id());
  compare.set_baseline(evaluation->id());
  compare.set_protocol_hash(evaluation->protocol_hash());
  auto comparison = (*client)->Compare(compare);
  ASSERT_TRUE(comparison.ok()) << comparison.status();
  EXPECT_EQ(comparison->verdict(), v1::VERDICT_NO_SIGNIFICANT_DIFFERENCE);
  EXPECT_EQ(comparison->pairs(), 12);
  compare.set_protocol_hash(std::string(64, '0'));
  EXPECT_FALSE((*client)->Compare(compare).ok());
  v1::PromoteCandidateRequest promote;
  promote.set_model("tiny");
  promote.set_protocol_name(dir_ + "/protocols/swing.yaml");
  auto decision = (*client)->Promote(promote, absl::Minutes(1), nullptr);
  EXPECT_EQ(decision.status().code(), absl::StatusCode::kInvalidArgument) << decision.status();
  EXPECT_THAT(decision.status().message(), HasSubstr("is a file path"));
}

TEST_F(EvalServiceTest, GetProtocolReportsTheServersProtocolAndItsHash) {
  EvalGrpcService service(handler_.get(), EvalGrpcService::Options());
  common::GrpcServerOptions options;
  options.listen_address = "unix:" + dir_ + "/eval.sock";
  auto server = common::GrpcServer::Create(options, {&service});
  ASSERT_TRUE(server.ok()) << server.status();
  common::GrpcChannelOptions channel;
  channel.target = (*server)->target();
  auto client = EvalClient::Connect(channel);
  ASSERT_TRUE(client.ok()) << client.status();

  auto info = (*client)->GetProtocol("swing");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->protocol().name(), "swing");
  EXPECT_EQ(info->protocol().episodes(), 12);
  EXPECT_EQ(info->protocol_hash(), ProtocolHash(info->protocol()));
  std::ofstream(dir_ + "/protocols/swing.yaml")
      << "task: cartpole-swingup\nbase_seed: 3\nseed_start: 500\nepisodes: 13\nmax_steps: 30\n"
         "execution: {chunk: {mode: RECEDING_HORIZON, receding_steps: 2}}\n";
  auto edited = (*client)->GetProtocol("swing");
  ASSERT_TRUE(edited.ok()) << edited.status();
  EXPECT_EQ(edited->protocol().episodes(), 13);
  EXPECT_NE(edited->protocol_hash(), info->protocol_hash());

  const absl::Status unknown = (*client)->GetProtocol("nosuch").status();
  EXPECT_EQ(unknown.code(), absl::StatusCode::kNotFound) << unknown;
  EXPECT_THAT(unknown.message(), HasSubstr("protocol 'nosuch' not found"));
  const absl::Status path = (*client)->GetProtocol(dir_ + "/protocols/swing.yaml").status();
  EXPECT_EQ(path.code(), absl::StatusCode::kInvalidArgument) << path;
  EXPECT_THAT(path.message(), HasSubstr("is a file path"));
}

}  // namespace
}  // namespace roboloop::eval
