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
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "common/access_roles.h"
#include "common/sha256.h"
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
#include "tests/registry/test_util.h"
#include "tests/util/subprocess.h"
#include "train/train_service.h"
#include "wiring/method_roles.h"

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
    dir_ = testing::MakeTempDir("service-auth");
    const common::GrpcServerOptions auth = Authentication();
    StartRegistry(dir_, auth);
    StartSimTrainEval(dir_, auth);
  }

  // How the servers authenticate: one token, kToken.
  virtual common::GrpcServerOptions Authentication() {
    common::GrpcServerOptions auth;
    auth.token_file = dir_ + "/token";
    std::ofstream(auth.token_file) << kToken;
    return auth;
  }

  // The token the test's own registry client sends.
  virtual std::string ClientToken() const { return kToken; }

  // `auth`'s authentication settings on a server listening on `listen_address`.
  static common::GrpcServerOptions ServerOptions(const common::GrpcServerOptions& auth,
                                                 const std::string& listen_address) {
    common::GrpcServerOptions options;
    options.listen_address = listen_address;
    options.token_file = auth.token_file;
    options.tokens_file = auth.tokens_file;
    options.method_roles = auth.method_roles;
    return options;
  }

  void StartRegistry(const std::string& dir, const common::GrpcServerOptions& auth) {
    registry::RegistryHost::Options host;
    host.registry.root = dir + "/store";
    host.server = ServerOptions(auth, host.server.listen_address);
    auto started = registry::RegistryHost::Create(host);
    ASSERT_TRUE(started.ok()) << started.status();
    registry_host_ = *std::move(started);
    common::GrpcChannelOptions channel;
    channel.target = registry_host_->target();
    channel.token = ClientToken();
    auto client = registry::RegistryClient::Connect(channel);
    ASSERT_TRUE(client.ok()) << client.status();
    registry_client_ = *std::move(client);
    AddHostedServices(registry_host_->server());
  }

  // The embedded composition of wiring/services.cc, with authentication.
  void StartSimTrainEval(const std::string& dir, const common::GrpcServerOptions& auth) {
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
    const common::GrpcServerOptions options = ServerOptions(auth, "unix:" + dir + "/services.sock");
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

  std::string dir_;
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

// The same servers with a tokens file holding one caller per role and the product's method roles
// (wiring/method_roles.h).
class ServiceRolesTest : public ServiceAuthTest {
 protected:
  common::GrpcServerOptions Authentication() override {
    common::GrpcServerOptions auth;
    auth.tokens_file = dir_ + "/tokens.yaml";
    std::ofstream file(auth.tokens_file);
    file << "tokens:\n";
    for (common::Role role : kRoles) {
      const std::string name(common::RoleName(role));
      file << "  - {name: " << name << "-caller, sha256: " << Sha256Hex(TokenOf(role))
           << ", role: " << name << "}\n";
    }
    auth.method_roles = wiring::ServiceMethodRoles();
    return auth;
  }

  std::string ClientToken() const override { return TokenOf(common::Role::kAdmin); }

  static std::string TokenOf(common::Role role) {
    return std::string(common::RoleName(role)) + "-token";
  }

  static constexpr common::Role kRoles[] = {common::Role::kRead, common::Role::kWrite,
                                            common::Role::kAdmin};
};

TEST_F(ServiceRolesTest, EveryProductMethodHasARoleAndEveryRoleAMethod) {
  std::set<std::string> declared = {"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"};
  for (const google::protobuf::ServiceDescriptor* service : ProductServices()) {
    for (int i = 0; i < service->method_count(); ++i) {
      const std::string path = MethodPath(*service->method(i));
      declared.insert(path);
      EXPECT_EQ(wiring::ServiceMethodRoles().count(path), 1u) << path << " has no role";
    }
  }
  for (const auto& [path, role] : wiring::ServiceMethodRoles()) {
    EXPECT_EQ(declared.count(path), 1u) << path << " is not a declared method";
  }
}

TEST_F(ServiceRolesTest, ACallerBelowAMethodsRoleIsDeniedNamingTheRoleItNeeds) {
  int denied = 0;
  for (const google::protobuf::ServiceDescriptor* service : ProductServices()) {
    const std::string& target = target_of_service_[service->full_name()];
    for (int i = 0; i < service->method_count(); ++i) {
      const std::string path = MethodPath(*service->method(i));
      const common::Role needed = wiring::ServiceMethodRoles().at(path);
      for (common::Role caller : kRoles) {
        if (caller >= needed) continue;
        const grpc::Status status = CallWithEmptyRequest(target, path, TokenOf(caller));
        EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED) << path;
        EXPECT_THAT(status.error_message(),
                    HasSubstr("needs role '" + std::string(common::RoleName(needed)) + "'"))
            << path;
        ++denied;
      }
    }
  }
  EXPECT_GE(denied, 20);
}

TEST_F(ServiceRolesTest, ReadMethodsAdmitTheReadCaller) {
  for (const auto& [path, role] : wiring::ServiceMethodRoles()) {
    if (role != common::Role::kRead || absl::StartsWith(path, "/grpc.") ||
        absl::EndsWith(path, "/DownloadBlob")) {
      continue;
    }
    const std::string service = path.substr(1, path.rfind('/') - 1);
    const grpc::Status status =
        CallWithEmptyRequest(target_of_service_[service], path, TokenOf(common::Role::kRead));
    EXPECT_NE(status.error_code(), grpc::StatusCode::PERMISSION_DENIED) << path;
    EXPECT_NE(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << path;
  }
}

TEST_F(ServiceRolesTest, AliasHistoryNamesTheAuthenticatedCaller) {
  const std::string blob = dir_ + "/policy.bin";
  std::ofstream(blob) << "weights";
  auto uploaded = registry_client_->UploadFile(blob);
  ASSERT_TRUE(uploaded.ok()) << uploaded.status();
  v1::RegisterCheckpointRequest request;
  request.set_manifest_json(
      registry::testing_util::MakeManifest("roles-model", {{"policy", "weights"}}, 1).dump());
  auto checkpoint = registry_client_->RegisterCheckpoint(request);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  v1::SetAliasRequest alias;
  alias.set_model("roles-model");
  alias.set_alias("staging");
  alias.set_ref(checkpoint->id());
  alias.set_reason("roles test");
  auto moved = registry_client_->SetAlias(alias);
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_EQ(moved->user(), "admin-caller");
}

}  // namespace
}  // namespace roboloop
