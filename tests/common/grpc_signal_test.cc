// ServeUntilShutdownSignal: a SIGTERM sent to the process shuts the server down gracefully,
// letting an in-flight call finish; a SIGHUP re-reads the tokens file while the connection stays
// open. Alone in its binary: the signals must be blocked before any thread (gRPC's included)
// exists.
#include "common/grpc_signals.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>

#include "common/grpc_client.h"
#include "common/grpc_server.h"
#include "common/sha256.h"
#include "gtest/gtest.h"
#include "tests/common/grpc_test_support.h"

namespace {

using ::roboloop::common::GrpcChannel;
using ::roboloop::common::GrpcChannelOptions;
using ::roboloop::common::GrpcServer;
using ::roboloop::common::GrpcServerOptions;

TEST(GrpcSignalTest, SigtermShutsDownGracefully) {
  auto signals = roboloop::common::ShutdownSignals::Create();
  ASSERT_TRUE(signals.ok()) << signals.status();
  roboloop_test::EchoService service;
  auto server = GrpcServer::Create(GrpcServerOptions(), {&service});
  ASSERT_TRUE(server.ok()) << server.status();
  GrpcChannelOptions options;
  options.target = (*server)->target();
  options.retry.max_attempts = 1;
  auto channel = GrpcChannel::Create(options);
  ASSERT_TRUE(channel.ok()) << channel.status();

  auto in_flight = std::async(std::launch::async, [&] {
    auto stub = roboloop::testing::Echo::NewStub((*channel)->channel());
    roboloop::testing::EchoRequest request;
    request.set_sleep_ms(300);
    roboloop::testing::EchoReply reply;
    auto context = (*channel)->NewContext();
    return stub->Say(context.get(), request, &reply);
  });
  while (service.executed < 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(kill(getpid(), SIGTERM), 0);

  EXPECT_EQ(roboloop::common::ServeUntilShutdownSignal(**server, **signals), SIGTERM);
  (*server)->Wait();
  EXPECT_TRUE(in_flight.get().ok());
  EXPECT_FALSE((*channel)->CheckServing("").ok());
}

// A tokens-file entry admitting `token` as `name` with role admin.
std::string AdminEntry(const std::string& name, const std::string& token) {
  return "  - {name: " + name + ", sha256: " + roboloop::Sha256Hex(token) + ", role: admin}\n";
}

TEST(GrpcSignalTest, SighupReReadsTheTokensFileOnAnOpenConnection) {
  auto signals = roboloop::common::ShutdownSignals::Create();
  ASSERT_TRUE(signals.ok()) << signals.status();
  roboloop_test::TempDir dir;
  const std::string tokens = dir.File("tokens.yaml");
  roboloop_test::WriteFile(tokens, "tokens:\n" + AdminEntry("old", "old-token"));
  GrpcServerOptions server_options;
  server_options.tokens_file = tokens;
  roboloop_test::EchoService service;
  auto server = GrpcServer::Create(server_options, {&service});
  ASSERT_TRUE(server.ok()) << server.status();
  auto serving = std::async(std::launch::async, [&] {
    return roboloop::common::ServeUntilShutdownSignal(**server, **signals);
  });

  GrpcChannelOptions options;
  options.target = (*server)->target();
  options.retry.max_attempts = 1;
  auto channel = GrpcChannel::Create(options);
  ASSERT_TRUE(channel.ok()) << channel.status();
  auto stub = roboloop::testing::Echo::NewStub((*channel)->channel());
  auto say = [&](const std::string& token) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer " + token);
    roboloop::testing::EchoReply reply;
    return stub->Say(&context, roboloop::testing::EchoRequest(), &reply).error_code();
  };
  ASSERT_EQ(say("old-token"), grpc::StatusCode::OK);
  EXPECT_EQ(say("new-token"), grpc::StatusCode::UNAUTHENTICATED);

  roboloop_test::WriteFile(tokens, "tokens:\n" + AdminEntry("new", "new-token"));
  ASSERT_EQ(kill(getpid(), SIGHUP), 0);
  grpc::StatusCode after = grpc::StatusCode::UNAUTHENTICATED;
  for (int i = 0; i < 200 && after != grpc::StatusCode::OK; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    after = say("new-token");
  }
  EXPECT_EQ(after, grpc::StatusCode::OK);
  EXPECT_EQ(say("old-token"), grpc::StatusCode::UNAUTHENTICATED);

  ASSERT_EQ(kill(getpid(), SIGTERM), 0);
  EXPECT_EQ(serving.get(), SIGTERM);
}

}  // namespace
