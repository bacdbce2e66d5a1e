// A pipeline run on remote services checks the seeds of the protocols it names as its eval service serves them
// (GetProtocol, over a unix socket): a protocol need not exist in the runner's --protocols-dir, one the service
// lacks is a validation error naming the protocol and the service, and an eval service older than GetProtocol has
// the runner's own protocols read, with a note once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <google/protobuf/wrappers.pb.h>

#include "common/grpc_server.h"
#include "eval/eval_grpc_service.h"
#include "eval/eval_service.h"
#include "eval/leaderboard_store.h"
#include "pipeline/runner.h"
#include "pipeline/stage_kind.h"
#include "roboloop/v1/eval.grpc.pb.h"
#include "tests/util/served_registry.h"
#include "tests/util/subprocess.h"

namespace roboloop::pipeline {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// A kind whose stages call no service and claim seeds: `draw` rolls out episodes [0, 100) of base seed 0 for
// data, `hold` is a gate under the protocol its text names.
StageKind SeedClaimingKind(const std::string& name) {
  StageKind kind;
  kind.name = name;
  kind.params = google::protobuf::StringValue::descriptor();
  kind.run = [](const v1::Stage&, const StageContext&, StageServices&) -> absl::StatusOr<StageOutputs> {
    return StageOutputs{};
  };
  const bool gate = name == "hold";
  kind.seeds = [gate](const v1::Stage& stage) {
    SeedClaims claims;
    if (gate) {
      claims.protocol = stage.params().fields().at("value").string_value();
      claims.gate = true;
    } else {
      claims.consumed.push_back({0, 0, 100, "draw"});
    }
    return claims;
  };
  return kind;
}

// A protocol of base seed 0 whose episodes start at `seed_start`.
std::string ProtocolText(int seed_start) {
  return "task: cartpole-swingup\nbase_seed: 0\nseed_start: " + std::to_string(seed_start) +
         "\nepisodes: 10\nmax_steps: 20\nexecution: {chunk: {mode: FULL_CHUNK}}\n";
}

// An EvalService as served before GetProtocol: every call is unimplemented.
class EvalServiceWithoutGetProtocol final : public v1::EvalService::Service {};

constexpr char kPipeline[] = R"(name: p
stages:
  - {name: collect, kind: draw, params: {value: demos}}
  - {name: gate, kind: hold, params: {value: gate}}
  - {name: again, kind: hold, params: {value: gate}}
)";

class ServedProtocolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("served-protocol");
    for (const char* folder : {"/served", "/local"}) ASSERT_TRUE(std::filesystem::create_directories(dir_ + folder));
    auto registry = testing::ServeRegistry(dir_ + "/registry", "unix:" + dir_ + "/registry.sock");
    ASSERT_TRUE(registry.ok()) << registry.status();
    registry_ = *std::move(registry);
    eval::LeaderboardStore::Options store;
    store.root = dir_ + "/leaderboard";
    auto opened = eval::LeaderboardStore::Create(store);
    ASSERT_TRUE(opened.ok()) << opened.status();
    store_ = *std::move(opened);
    eval::EvalServiceHandler::Options options;
    options.store = store_.get();
    options.registry = registry_.client.get();
    options.protocols_dir = dir_ + "/served";
    auto handler = eval::EvalServiceHandler::Create(options);
    ASSERT_TRUE(handler.ok()) << handler.status();
    handler_ = *std::move(handler);
    eval_service_ = std::make_unique<eval::EvalGrpcService>(handler_.get(), eval::EvalGrpcService::Options());
    for (const char* kind : {"draw", "hold"}) ASSERT_TRUE(kinds_.Register(SeedClaimingKind(kind)).ok());
  }

  // Serves `service` as the eval service on a unix socket and names it in the services file; the other services'
  // sockets do not exist (the pipelines here call none).
  void ServeEval(grpc::Service* service) {
    common::GrpcServerOptions options;
    options.listen_address = "unix:" + dir_ + "/eval.sock";
    auto server = common::GrpcServer::Create(options, {service});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    const std::string none = "unix:" + dir_ + "/none.sock";
    std::ofstream(dir_ + "/services.yaml") << "registry: {address: \"" << none << "\"}\n"
                                           << "train: {address: \"" << none << "\"}\n"
                                           << "eval: {address: \"" << server_->target() << "\"}\n"
                                           << "sim:\n  - {address: \"" << none << "\"}\n";
  }

  // Runs kPipeline on the services of ServeEval with the runner's protocols in <dir>/local.
  absl::StatusOr<PipelineRunResult> Run() {
    std::ofstream(dir_ + "/p.yaml") << kPipeline;
    PipelineRunOptions options;
    options.file = dir_ + "/p.yaml";
    options.services_file = dir_ + "/services.yaml";
    options.root = dir_ + "/runner";
    options.protocols_dir = dir_ + "/local";
    options.kinds = &kinds_;
    return RunPipelineFile(options);
  }

  void WriteProtocol(const std::string& folder, int seed_start) {
    std::ofstream(dir_ + "/" + folder + "/gate.yaml") << ProtocolText(seed_start);
  }

  std::string dir_;
  testing::ServedRegistry registry_;
  std::unique_ptr<eval::LeaderboardStore> store_;
  std::unique_ptr<eval::EvalServiceHandler> handler_;
  std::unique_ptr<eval::EvalGrpcService> eval_service_;
  std::unique_ptr<common::GrpcServer> server_;
  StageKindRegistry kinds_;
};

TEST_F(ServedProtocolTest, AGateProtocolOnlyTheEvalServiceHasIsCheckedWithItsSeeds) {
  ASSERT_NO_FATAL_FAILURE(ServeEval(eval_service_.get()));
  WriteProtocol("served", 50);
  const absl::Status overlapping = Run().status();
  EXPECT_TRUE(absl::IsInvalidArgument(overlapping)) << overlapping;
  EXPECT_THAT(overlapping.message(),
              AllOf(HasSubstr("stage 'gate': its protocol is a gate and must hold out its seeds: "),
                    HasSubstr("base seed 0, episodes [50, 60)) overlaps stage collect (draw)"),
                    Not(HasSubstr("not found"))));

  WriteProtocol("served", 1000);
  auto run = Run();
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_TRUE(run->status.ok()) << run->status;
}

TEST_F(ServedProtocolTest, AProtocolTheEvalServiceLacksIsAnErrorNamingItAndTheService) {
  ASSERT_NO_FATAL_FAILURE(ServeEval(eval_service_.get()));
  WriteProtocol("local", 1000);
  const absl::Status missing = Run().status();
  EXPECT_TRUE(absl::IsInvalidArgument(missing)) << missing;
  EXPECT_THAT(missing.message(), AllOf(HasSubstr("stage 'gate': protocol 'gate' is not served by the eval service at " +
                                                 server_->target()),
                                       HasSubstr("stage 'again': protocol 'gate' is not served")));
}

TEST_F(ServedProtocolTest, AnEvalServiceWithoutGetProtocolHasTheLocalProtocolsCheckedAndSaysSoOnce) {
  EvalServiceWithoutGetProtocol older;
  ASSERT_NO_FATAL_FAILURE(ServeEval(&older));
  WriteProtocol("local", 50);
  ::testing::internal::CaptureStderr();
  const absl::Status overlapping = Run().status();
  const std::string note = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(overlapping.message(),
              AllOf(HasSubstr("stage 'again': its protocol is a gate and must hold out its seeds"),
                    HasSubstr("base seed 0, episodes [50, 60)) overlaps")));
  EXPECT_THAT(note, AllOf(HasSubstr("note: the eval service at " + server_->target() + " has no GetProtocol"),
                          HasSubstr("from --protocols-dir " + dir_ + "/local here")));
  EXPECT_EQ(note.find("note:"), note.rfind("note:")) << "noted once: " << note;
}

}  // namespace
}  // namespace roboloop::pipeline
