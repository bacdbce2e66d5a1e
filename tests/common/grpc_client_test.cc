// GrpcChannel: retries of UNAVAILABLE against a server that comes up late, errors naming the
// target, option validation, per-call contexts, and the status conversions.
#include "common/grpc_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "common/grpc_server.h"
#include "common/grpc_status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/common/grpc_test_support.h"

namespace {

using ::roboloop::common::GrpcChannel;
using ::roboloop::common::GrpcChannelOptions;
using ::roboloop::common::GrpcServer;
using ::roboloop::common::GrpcServerOptions;
using ::roboloop_test::EchoService;
using ::testing::HasSubstr;
using ::testing::Not;

// A loopback port that was free a moment ago (bound to port 0, then released).
int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t size = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &size);
  close(fd);
  return ntohs(addr.sin_port);
}

std::unique_ptr<GrpcChannel> Connect(const GrpcChannelOptions& options) {
  auto channel = GrpcChannel::Create(options);
  EXPECT_TRUE(channel.ok()) << channel.status();
  return *std::move(channel);
}

grpc::Status Say(const GrpcChannel& channel) {
  auto stub = roboloop::testing::Echo::NewStub(channel.channel());
  roboloop::testing::EchoRequest request;
  request.set_text("late");
  roboloop::testing::EchoReply reply;
  auto context = channel.NewContext();
  return stub->Say(context.get(), request, &reply);
}

// Starts a call to a port nobody listens on, brings a server up there after `delay`, and
// returns the call's status.
grpc::Status CallWhileServerStartsLate(const GrpcChannelOptions& base, std::chrono::milliseconds delay) {
  const int port = FreeLoopbackPort();
  GrpcChannelOptions options = base;
  options.target = "127.0.0.1:" + std::to_string(port);
  auto channel = Connect(options);
  auto call = std::async(std::launch::async, [&] { return Say(*channel); });
  std::this_thread::sleep_for(delay);
  EchoService service;
  GrpcServerOptions server_options;
  server_options.listen_address = options.target;
  auto server = GrpcServer::Create(server_options, {&service});
  EXPECT_TRUE(server.ok()) << server.status();
  return call.get();
}

TEST(GrpcClientRetryTest, RetriesUnavailableUntilTheServerIsUp) {
  GrpcChannelOptions options;
  options.retry.max_attempts = 5;
  options.retry.initial_backoff = absl::Milliseconds(200);
  options.retry.max_backoff = absl::Milliseconds(800);
  options.default_deadline = absl::Seconds(10);
  grpc::Status status = CallWhileServerStartsLate(options, std::chrono::milliseconds(300));
  EXPECT_TRUE(status.ok()) << status.error_message();
}

TEST(GrpcClientRetryTest, WithoutRetriesTheSameCallFails) {
  GrpcChannelOptions options;
  options.retry.max_attempts = 1;
  options.default_deadline = absl::Seconds(10);
  grpc::Status status = CallWhileServerStartsLate(options, std::chrono::milliseconds(300));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST(GrpcClientTest, UnreachableServerGivesUnavailableNamingTheTarget) {
  GrpcChannelOptions options;
  options.target = "127.0.0.1:" + std::to_string(FreeLoopbackPort());
  options.retry.max_attempts = 2;
  options.retry.initial_backoff = absl::Milliseconds(50);
  options.retry.max_backoff = absl::Milliseconds(50);
  auto channel = Connect(options);
  absl::Status status = channel->CallStatus(Say(*channel), "Say");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("Say to " + options.target));
  absl::Status health = channel->CheckServing("");
  EXPECT_THAT(health.message(), HasSubstr(options.target));
  absl::Status wait = channel->WaitForConnected(absl::Milliseconds(200));
  EXPECT_EQ(wait.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(wait.message(), HasSubstr(options.target));
}

// A server this program started on a private socket is named as its user knows it.
TEST(GrpcClientTest, ADisplayNameReplacesTheTargetInErrors) {
  GrpcChannelOptions options;
  options.target = "unix:/tmp/roboloop-no-such-dir-" + std::to_string(getpid()) + "/private.sock";
  options.display_name = "the registry at my-store";
  options.retry.max_attempts = 1;
  auto channel = Connect(options);
  const absl::Status status = channel->CallStatus(Say(*channel), "Say");
  EXPECT_THAT(status.message(), HasSubstr("Say to the registry at my-store"));
  const absl::Status wait = channel->WaitForConnected(absl::Milliseconds(50));
  for (const absl::Status& s : {status, channel->CheckServing(""), wait}) {
    EXPECT_THAT(s.message(), HasSubstr("the registry at my-store"));
    EXPECT_THAT(std::string(s.message()), Not(HasSubstr("private.sock")));
  }
}

TEST(GrpcClientTest, ContextCarriesDeadlineAndBearerToken) {
  GrpcChannelOptions options;
  options.target = "127.0.0.1:1";
  options.token = "tok";
  options.default_deadline = absl::Seconds(7);
  auto channel = Connect(options);
  auto context = channel->NewContext();
  const auto remaining = context->deadline() - std::chrono::system_clock::now();
  EXPECT_GT(remaining, std::chrono::seconds(6));
  EXPECT_LE(remaining, std::chrono::seconds(7));
}

TEST(GrpcClientTest, TokenFileIsReadAndSentToTheServer) {
  roboloop_test::TempDir dir;
  roboloop_test::WriteFile(dir.File("token"), "file-token\n");
  EchoService service;
  GrpcServerOptions server_options;
  server_options.token_file = dir.File("token");
  auto server = GrpcServer::Create(server_options, {&service});
  ASSERT_TRUE(server.ok()) << server.status();
  GrpcChannelOptions options;
  options.target = (*server)->target();
  options.token_file = dir.File("token");
  EXPECT_TRUE(Say(*Connect(options)).ok());
}

TEST(GrpcClientTest, InvalidOptionsAreErrorsNamingTheTarget) {
  GrpcChannelOptions options;
  EXPECT_THAT(GrpcChannel::Create(options).status().message(), HasSubstr("empty"));
  options.target = "host-without-port";
  EXPECT_EQ(GrpcChannel::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
  options.target = "127.0.0.1:5000";
  options.retry.max_attempts = 9;
  EXPECT_THAT(GrpcChannel::Create(options).status().message(), HasSubstr("max_attempts"));
  options.retry.max_attempts = 3;
  options.token = "has space";
  EXPECT_THAT(GrpcChannel::Create(options).status().message(), HasSubstr("127.0.0.1:5000"));
  options.token.clear();
  options.tls_root_cert_file = "/nonexistent/ca.pem";
  EXPECT_THAT(GrpcChannel::Create(options).status().message(), HasSubstr("/nonexistent/ca.pem"));
}

TEST(GrpcClientTest, RetryServiceConfigIsValidJsonWithThePolicy) {
  roboloop::common::GrpcRetryPolicy policy;
  policy.max_attempts = 4;
  policy.initial_backoff = absl::Milliseconds(250);
  policy.max_backoff = absl::Seconds(3);
  policy.backoff_multiplier = 1.5;
  const auto json = nlohmann::json::parse(roboloop::common::RetryServiceConfigJson(policy));
  const auto& retry = json["methodConfig"][0]["retryPolicy"];
  EXPECT_EQ(retry["maxAttempts"], 4);
  EXPECT_EQ(retry["initialBackoff"], "0.250s");
  EXPECT_EQ(retry["maxBackoff"], "3.000s");
  EXPECT_DOUBLE_EQ(retry["backoffMultiplier"].get<double>(), 1.5);
  EXPECT_EQ(retry["retryableStatusCodes"][0], "UNAVAILABLE");
}

TEST(GrpcStatusTest, ConversionsKeepCodeAndMessage) {
  for (int code = 1; code <= 16; ++code) {
    const grpc::Status grpc_status(static_cast<grpc::StatusCode>(code), "msg " + std::to_string(code));
    const absl::Status converted = roboloop::common::GrpcToAbsl(grpc_status);
    EXPECT_EQ(static_cast<int>(converted.code()), code);
    EXPECT_EQ(converted.message(), grpc_status.error_message());
    const grpc::Status back = roboloop::common::AbslToGrpc(converted);
    EXPECT_EQ(back.error_code(), grpc_status.error_code());
    EXPECT_EQ(back.error_message(), grpc_status.error_message());
  }
  EXPECT_TRUE(roboloop::common::GrpcToAbsl(grpc::Status::OK).ok());
  EXPECT_TRUE(roboloop::common::AbslToGrpc(absl::OkStatus()).ok());
  EXPECT_EQ(roboloop::common::GrpcToAbsl(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "x")).code(),
            absl::StatusCode::kUnauthenticated);
}

}  // namespace
