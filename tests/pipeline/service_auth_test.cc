// Authentication covers every RPC of the product: each method of each service declared in
// proto/roboloop/v1 (listed by CMake into ROBOLOOP_PRODUCT_SERVICES, methods read from the
// protobuf descriptors) is called over a real socket on token-protected servers composed as
// the product composes them (registry host; sim, train and eval on one server) with no token
// and with a wrong one, and must be refused with UNAUTHENTICATED. A new RPC, or a new service
// hosted here, is covered without touching this file; a new service not hosted here fails.
#include <chrono>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "common/grpc_client.h"
#include "common/grpc_server.h"
#include "eval/eval_grpc_service.h"
#include "eval/eval_service.h"
#include "eval/leaderboard_store.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "registry/registry_client.h"
#include "registry/registry_host.h"
#include "sim/sim_grpc_service.h"
#include "sim/sim_service.h"
#include "sim/task_registry.h"
#include "tests/util/subprocess.h"
#include "train/train_service.h"

#ifndef ROBOLOOP_PRODUCT_SERVICES
#error "ROBOLOOP_PRODUCT_SERVICES must list the services of proto/roboloop/v1 (tests/CMakeLists.txt)"
#endif

namespace roboloop {
namespace {

using ::testing::HasSubstr;

constexpr char kToken[] = "service-auth-token";

// Full names of the services declared in proto/roboloop/v1, e.g. "roboloop.v1.SimService".
std::vector<std::string> ProductServiceNames() {
  return absl::StrSplit(ROBOLOOP_PRODUCT_SERVICES, ',', absl::SkipEmpty());
}

// "/<package>.<Service>/<Method>", the path a call to `method` travels under.
std::string MethodPath(const google::protobuf::MethodDescriptor& method) {
  return "/" + method.service()->full_name() + "/" + method.name();
}

// Calls `path` on `target` with one empty request message (valid for every method kind; the
// server must refuse the call before reading it), sending `token` unless it is empty.
grpc::Status CallWithEmptyRequest(const std::string& target, const std::string& path,
                                  const std::string& token) {
  common::GrpcChannelOptions options;
  options.target = target;
  options.token = token;
  options.retry.max_attempts = 1;
  auto channel = common::GrpcChannel::Create(options);
  if (!channel.ok()) return grpc::Status(grpc::StatusCode::INTERNAL, channel.status().ToString());
  grpc::GenericStub stub((*channel)->channel());
  auto context = (*channel)->NewContext();
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Slice empty{std::string()};
  grpc::ByteBuffer request(&empty, 1);
  grpc::ByteBuffer response;
  std::promise<grpc::Status> finished;
  stub.UnaryCall(context.get(), path, grpc::StubOptions(), &request, &response,
                 [&finished](grpc::Status status) { finished.set_value(std::move(status)); });
  return finished.get_future().get();
}

class ServiceAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string dir = testing::MakeTempDir("service-auth");
    const std::string token_file = dir + "/token";
    std::ofstream(token_file) << kToken;
    StartRegistry(dir, token_file);
    StartSimTrainEval(dir, token_file);
  }

  void StartRegistry(const std::string& dir, const std::string& token_file) {
    registry::RegistryHost::Options host;
    host.registry.root = dir + "/store";
    host.server.token_file = token_file;
    auto started = registry::RegistryHost::Create(host);
    ASSERT_TRUE(started.ok()) << started.status();
    registry_host_ = *std::move(started);
    common::GrpcChannelOptions channel;
    channel.target = registry_host_->target();
    channel.token_file = token_file;
    auto client = registry::RegistryClient::Connect(channel);
    ASSERT_TRUE(client.ok()) << client.status();
    registry_client_ = *std::move(client);
    AddHostedServices(registry_host_->server());
  }

  // The embedded composition of wiring/services.cc, with a token.
  void StartSimTrainEval(const std::string& dir, const std::string& token_file) {
    auto sim = sim::SimServiceHandler::Create({&tasks_});
    ASSERT_TRUE(sim.ok()) << sim.status();
    sim_ = *std::move(sim);
    sim_service_ = std::make_unique<sim::SimGrpcService>(sim_.get(), sim::SimGrpcService::Options());
    train::TrainServiceOptions train;
    train.root = dir + "/store";
    train.roboloop_binary = "/bin/false";  // no training run, should a call ever get through
    train_ = std::make_unique<train::TrainServiceHandler>(train);
    train_service_ = std::make_unique<train::TrainGrpcService>(train_.get());
    eval::LeaderboardStore::Options leaderboard;
    leaderboard.root = dir + "/store";
    auto store = eval::LeaderboardStore::Create(leaderboard);
    ASSERT_TRUE(store.ok()) << store.status();
    leaderboard_ = *std::move(store);
    eval::EvalServiceHandler::Options eval;
    eval.store = leaderboard_.get();
    eval.registry = registry_client_.get();
    auto handler = eval::EvalServiceHandler::Create(eval);
    ASSERT_TRUE(handler.ok()) << handler.status();
    eval_ = *std::move(handler);
    eval_service_ = std::make_unique<eval::EvalGrpcService>(eval_.get(), eval::EvalGrpcService::Options());
    common::GrpcServerOptions options;
    options.listen_address = "unix:" + dir + "/services.sock";
    options.token_file = token_file;
    auto server = common::GrpcServer::Create(
        options, {sim_service_.get(), train_service_.get(), eval_service_.get()});
    ASSERT_TRUE(server.ok()) << server.status();
    services_server_ = *std::move(server);
    AddHostedServices(*services_server_);
  }

  void AddHostedServices(const common::GrpcServer& server) {
    for (const std::string& name : server.service_names()) target_of_service_[name] = server.target();
  }

  // The product services' descriptors; fails the test for a name protoc did not generate here.
  std::vector<const google::protobuf::ServiceDescriptor*> ProductServices() const {
    std::vector<const google::protobuf::ServiceDescriptor*> services;
    for (const std::string& name : ProductServiceNames()) {
      const google::protobuf::ServiceDescriptor* service =
          google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(name);
      EXPECT_NE(service, nullptr) << name << " is not linked into this test: host it below";
      if (service != nullptr) services.push_back(service);
    }
    return services;
  }

  sim::TaskRegistry tasks_;
  std::unique_ptr<registry::RegistryHost> registry_host_;
  std::unique_ptr<registry::RegistryClient> registry_client_;
  std::unique_ptr<sim::SimServiceHandler> sim_;
  std::unique_ptr<sim::SimGrpcService> sim_service_;
  std::unique_ptr<train::TrainServiceHandler> train_;
  std::unique_ptr<train::TrainGrpcService> train_service_;
  std::unique_ptr<eval::LeaderboardStore> leaderboard_;
  std::unique_ptr<eval::EvalServiceHandler> eval_;
  std::unique_ptr<eval::EvalGrpcService> eval_service_;
  std::unique_ptr<common::GrpcServer> services_server_;
  std::map<std::string, std::string> target_of_service_;  // full service name -> server target
};

TEST_F(ServiceAuthTest, TheProductDeclaresTheKnownServices) {
  EXPECT_THAT(ProductServiceNames(),
              ::testing::IsSupersetOf({"roboloop.v1.RegistryService", "roboloop.v1.SimService",
                                       "roboloop.v1.EvalService", "roboloop.v1.TrainService"}));
}

TEST_F(ServiceAuthTest, EveryProductServiceIsHostedHere) {
  for (const google::protobuf::ServiceDescriptor* service : ProductServices()) {
    EXPECT_TRUE(target_of_service_.count(service->full_name()) == 1)
        << service->full_name() << " is declared in proto/roboloop/v1 but not served by this test";
  }
}

TEST_F(ServiceAuthTest, EveryMethodRefusesCallsWithoutTheRightToken) {
  int refused = 0;
  for (const google::protobuf::ServiceDescriptor* service : ProductServices()) {
    const std::string& target = target_of_service_[service->full_name()];
    ASSERT_FALSE(target.empty()) << service->full_name();
    for (int i = 0; i < service->method_count(); ++i) {
      const std::string path = MethodPath(*service->method(i));
      const grpc::Status missing = CallWithEmptyRequest(target, path, "");
      EXPECT_EQ(missing.error_code(), grpc::StatusCode::UNAUTHENTICATED) << path;
      EXPECT_THAT(missing.error_message(), HasSubstr("missing bearer token")) << path;
      const grpc::Status wrong = CallWithEmptyRequest(target, path, "not-the-token");
      EXPECT_EQ(wrong.error_code(), grpc::StatusCode::UNAUTHENTICATED) << path;
      EXPECT_THAT(wrong.error_message(), HasSubstr("invalid bearer token")) << path;
      refused += 2;
    }
  }
  EXPECT_GE(refused, 2 * 25);  // 25 RPCs when this test was written
}

TEST_F(ServiceAuthTest, TheRightTokenReachesTheHandlers) {
  const grpc::Status tasks = CallWithEmptyRequest(target_of_service_["roboloop.v1.SimService"],
                                                  "/roboloop.v1.SimService/ListTasks", kToken);
  EXPECT_TRUE(tasks.ok()) << tasks.error_message();
  const grpc::Status checkpoints =
      CallWithEmptyRequest(target_of_service_["roboloop.v1.RegistryService"],
                           "/roboloop.v1.RegistryService/ListCheckpoints", kToken);
  EXPECT_TRUE(checkpoints.ok()) << checkpoints.error_message();
}

}  // namespace
}  // namespace roboloop
