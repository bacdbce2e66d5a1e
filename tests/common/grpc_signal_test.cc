// ServeUntilShutdownSignal: a SIGTERM sent to the process shuts the server down gracefully,
// letting an in-flight call finish. Alone in its binary: the signals must be blocked before
// any thread (gRPC's included) exists.
#include "common/grpc_signals.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>

#include "common/grpc_client.h"
#include "common/grpc_server.h"
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

}  // namespace
