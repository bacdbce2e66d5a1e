// GrpcServer over real sockets: loopback TCP and unix sockets, TLS with a certificate made at
// test time, the plaintext non-loopback guard, health during shutdown, draining and
// cancelling in-flight calls, and reflection.
#include "common/grpc_server.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/grpc_client.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/common/grpc_test_support.h"

namespace {

using ::grpc::health::v1::HealthCheckRequest;
using ::grpc::health::v1::HealthCheckResponse;
using ::roboloop::common::GrpcChannel;
using ::roboloop::common::GrpcChannelOptions;
using ::roboloop::common::GrpcServer;
using ::roboloop::common::GrpcServerOptions;
using ::roboloop_test::EchoService;
using ::roboloop_test::TempDir;
using ::testing::Contains;
using ::testing::HasSubstr;

std::unique_ptr<GrpcServer> StartServer(const GrpcServerOptions& options, EchoService* service) {
  auto server = GrpcServer::Create(options, {service});
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

std::unique_ptr<GrpcChannel> Connect(GrpcChannelOptions options) {
  auto channel = GrpcChannel::Create(options);
  EXPECT_TRUE(channel.ok()) << channel.status();
  return *std::move(channel);
}

std::unique_ptr<GrpcChannel> Connect(const std::string& target) {
  GrpcChannelOptions options;
  options.target = target;
  return Connect(options);
}

grpc::Status Say(const GrpcChannel& channel, const std::string& text, int sleep_ms = 0,
                 std::string* echoed = nullptr) {
  auto stub = roboloop::testing::Echo::NewStub(channel.channel());
  roboloop::testing::EchoRequest request;
  request.set_text(text);
  request.set_sleep_ms(sleep_ms);
  roboloop::testing::EchoReply reply;
  auto context = channel.NewContext(absl::Seconds(20));
  grpc::Status status = stub->Say(context.get(), request, &reply);
  if (echoed != nullptr) *echoed = reply.text();
  return status;
}

void ExpectEchoWorks(const GrpcChannel& channel) {
  std::string echoed;
  grpc::Status status = Say(channel, "ping", 0, &echoed);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(echoed, "ping");
}

TEST(GrpcServerTest, LoopbackPortZeroPicksAPortAndServes) {
  EchoService service;
  auto server = StartServer(GrpcServerOptions(), &service);
  ASSERT_NE(server, nullptr);
  EXPECT_GT(server->port(), 0);
  EXPECT_EQ(server->target(), "127.0.0.1:" + std::to_string(server->port()));
  ExpectEchoWorks(*Connect(server->target()));
}

TEST(GrpcServerTest, UnixSocketCreatesParentDirectoriesAndServes) {
  TempDir dir;
  GrpcServerOptions options;
  const std::string path = dir.File("a/b/echo.sock");
  options.listen_address = "unix:" + path;
  EchoService service;
  auto server = StartServer(options, &service);
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->port(), 0);
  EXPECT_EQ(server->target(), "unix:" + path);
  ExpectEchoWorks(*Connect(server->target()));
}

TEST(GrpcServerTest, RelativeUnixSocketIsResolvedAgainstWorkingDirectory) {
  TempDir dir;
  const std::filesystem::path previous = std::filesystem::current_path();
  std::filesystem::current_path(dir.File(""));
  GrpcServerOptions options;
  options.listen_address = "unix:run/echo.sock";
  EchoService service;
  auto server = StartServer(options, &service);
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(std::filesystem::exists(dir.File("run/echo.sock")));
  ExpectEchoWorks(*Connect(server->target()));
  server.reset();
  std::filesystem::current_path(previous);
}

TEST(GrpcServerTest, StaleUnixSocketIsReplacedButLiveOneIsNot) {
  TempDir dir;
  const std::string path = dir.File("echo.sock");
  {
    // A socket file whose server is gone: bound, never listened, closed.
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    close(fd);
  }
  GrpcServerOptions options;
  options.listen_address = "unix:" + path;
  EchoService service;
  auto server = StartServer(options, &service);
  ASSERT_NE(server, nullptr);
  auto second = GrpcServer::Create(options, {});
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(), HasSubstr("in use"));
  ExpectEchoWorks(*Connect(server->target()));
}

TEST(GrpcServerTest, UnixSocketPathHoldingARegularFileIsRefused) {
  TempDir dir;
  roboloop_test::WriteFile(dir.File("data"), "precious");
  GrpcServerOptions options;
  options.listen_address = "unix:" + dir.File("data");
  auto server = GrpcServer::Create(options, {});
  EXPECT_EQ(server.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(server.status().message(), HasSubstr("not a socket"));
}

TEST(GrpcServerTest, PlaintextNonLoopbackListenerNeedsInsecure) {
  GrpcServerOptions options;
  options.listen_address = "0.0.0.0:0";
  auto refused = GrpcServer::Create(options, {});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("--insecure"));
  EXPECT_THAT(refused.status().message(), HasSubstr("0.0.0.0:0"));

  options.insecure = true;
  EchoService service;
  auto server = StartServer(options, &service);
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->target(), "127.0.0.1:" + std::to_string(server->port()));
  ExpectEchoWorks(*Connect(server->target()));
}

TEST(GrpcServerTest, BusyPortIsAClearError) {
  EchoService service;
  auto first = StartServer(GrpcServerOptions(), &service);
  ASSERT_NE(first, nullptr);
  GrpcServerOptions options;
  options.listen_address = first->target();
  auto second = GrpcServer::Create(options, {});
  EXPECT_FALSE(second.ok());
  EXPECT_THAT(second.status().message(), HasSubstr(first->target()));
}

TEST(GrpcServerTest, MessagesOverTheLimitAreRefused) {
  GrpcServerOptions options;
  options.max_message_bytes = 1024;
  EchoService service;
  auto server = StartServer(options, &service);
  ASSERT_NE(server, nullptr);
  auto channel = Connect(server->target());
  EXPECT_TRUE(Say(*channel, std::string(900, 'a')).ok());
  grpc::Status status = Say(*channel, std::string(2048, 'a'));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(service.executed, 1);
}

TEST(GrpcServerTest, BadListenAddressIsAClearError) {
  for (const char* address : {"localhost", "127.0.0.1:99999", "::1:80", "unix:", ""}) {
    GrpcServerOptions options;
    options.listen_address = address;
    auto server = GrpcServer::Create(options, {});
    EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument) << address;
    EXPECT_THAT(server.status().message(), HasSubstr("listen address")) << address;
  }
}

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cert_ = roboloop_test::MakeSelfSignedCertificate(dir_, "server");
    GrpcServerOptions options;
    options.listen_address = "0.0.0.0:0";  // TLS makes a non-loopback listener acceptable
    options.tls_cert_file = cert_.cert_file;
    options.tls_key_file = cert_.key_file;
    server_ = StartServer(options, &service_);
    ASSERT_NE(server_, nullptr);
  }

  GrpcChannelOptions TlsChannel(const std::string& root_file) const {
    GrpcChannelOptions options;
    options.target = server_->target();
    options.tls_root_cert_file = root_file;
    options.tls_server_name = "localhost";
    options.retry.max_attempts = 1;
    options.default_deadline = absl::Seconds(3);
    return options;
  }

  TempDir dir_;
  roboloop_test::TestCertificate cert_;
  EchoService service_;
  std::unique_ptr<GrpcServer> server_;
};

TEST_F(TlsTest, ClientTrustingTheCertificateConnects) {
  ExpectEchoWorks(*Connect(TlsChannel(cert_.cert_file)));
}

TEST_F(TlsTest, ClientTrustingAnotherCertificateFails) {
  const roboloop_test::TestCertificate other =
      roboloop_test::MakeSelfSignedCertificate(dir_, "other");
  grpc::Status status = Say(*Connect(TlsChannel(other.cert_file)), "x");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(service_.executed, 0);
}

TEST_F(TlsTest, PlaintextClientFails) {
  GrpcChannelOptions options = TlsChannel("");
  options.tls_server_name.clear();
  grpc::Status status = Say(*Connect(options), "x");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(service_.executed, 0);
}

TEST(TlsOptionsTest, UnreadableMismatchedOrHalfTlsSettingsAreClearErrors) {
  TempDir dir;
  const roboloop_test::TestCertificate a = roboloop_test::MakeSelfSignedCertificate(dir, "a");
  const roboloop_test::TestCertificate b = roboloop_test::MakeSelfSignedCertificate(dir, "b");
  GrpcServerOptions options;
  options.tls_cert_file = dir.File("missing.crt");
  options.tls_key_file = a.key_file;
  EXPECT_THAT(GrpcServer::Create(options, {}).status().message(),
              HasSubstr(dir.File("missing.crt")));
  options.tls_cert_file = a.cert_file;
  options.tls_key_file = b.key_file;
  EXPECT_THAT(GrpcServer::Create(options, {}).status().message(), HasSubstr("does not match"));
  options.tls_key_file = a.cert_file;
  EXPECT_THAT(GrpcServer::Create(options, {}).status().message(), HasSubstr("no unencrypted PEM"));
  options.tls_key_file.clear();
  EXPECT_THAT(GrpcServer::Create(options, {}).status().message(), HasSubstr("both"));
}

TEST(GrpcServerHealthTest, EveryServiceStartsServingAndCanBeToggled) {
  EchoService service;
  auto server = StartServer(GrpcServerOptions(), &service);
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(server->service_names(), Contains("roboloop.testing.Echo"));
  auto channel = Connect(server->target());
  EXPECT_TRUE(channel->CheckServing("").ok());
  EXPECT_TRUE(channel->CheckServing("roboloop.testing.Echo").ok());
  EXPECT_EQ(channel->CheckServing("no.such.Service").code(), absl::StatusCode::kNotFound);
  server->SetServingStatus("roboloop.testing.Echo", false);
  absl::Status down = channel->CheckServing("roboloop.testing.Echo");
  EXPECT_EQ(down.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(down.message(), HasSubstr("NOT_SERVING"));
}

TEST(GrpcServerHealthTest, WatchSeesNotServingWhenShutdownStarts) {
  EchoService service;
  auto server = StartServer(GrpcServerOptions(), &service);
  ASSERT_NE(server, nullptr);
  auto channel = Connect(server->target());
  auto stub = grpc::health::v1::Health::NewStub(channel->channel());
  HealthCheckRequest request;
  request.set_service("roboloop.testing.Echo");
  auto context = channel->NewContext(absl::Seconds(10));
  auto watch = stub->Watch(context.get(), request);
  HealthCheckResponse response;
  ASSERT_TRUE(watch->Read(&response));
  EXPECT_EQ(response.status(), HealthCheckResponse::SERVING);

  std::thread stopper([&] { server->Shutdown(absl::Seconds(2)); });
  ASSERT_TRUE(watch->Read(&response));
  EXPECT_EQ(response.status(), HealthCheckResponse::NOT_SERVING);
  context->TryCancel();
  while (watch->Read(&response)) {
  }
  watch->Finish();
  stopper.join();
}

TEST(GrpcServerHealthTest, DrainPeriodKeepsAnsweringNotServingBeforeClosing) {
  GrpcServerOptions options;
  options.drain_period = absl::Milliseconds(600);
  EchoService service;
  auto server = StartServer(options, &service);
  ASSERT_NE(server, nullptr);
  auto channel = Connect(server->target());
  ASSERT_TRUE(channel->CheckServing("").ok());
  std::thread stopper([&] { server->Shutdown(absl::Seconds(1)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  absl::Status draining = channel->CheckServing("");
  EXPECT_EQ(draining.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(draining.message(), HasSubstr("NOT_SERVING"));
  stopper.join();
}

TEST(GrpcServerShutdownTest, InFlightCallFinishesAndOverlongOneIsCancelledAtDeadline) {
  EchoService service;
  auto server = StartServer(GrpcServerOptions(), &service);
  ASSERT_NE(server, nullptr);
  GrpcChannelOptions channel_options;
  channel_options.target = server->target();
  channel_options.retry.max_attempts = 1;
  auto channel = Connect(channel_options);
  auto short_call = std::async(std::launch::async, [&] { return Say(*channel, "s", 300); });
  auto long_call = std::async(std::launch::async, [&] { return Say(*channel, "l", 15000); });
  while (service.executed < 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));

  const auto start = std::chrono::steady_clock::now();
  server->Shutdown(absl::Milliseconds(800));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  grpc::Status short_status = short_call.get();
  EXPECT_TRUE(short_status.ok()) << short_status.error_message();
  grpc::Status long_status = long_call.get();
  EXPECT_FALSE(long_status.ok());
  EXPECT_EQ(service.noticed_cancel, 1);
  EXPECT_GE(seconds, 0.7);
  EXPECT_LT(seconds, 3.0);
  EXPECT_EQ(Say(*channel, "after").error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST(GrpcServerReflectionTest, ReflectionListsTheServices) {
  EchoService service;
  auto server = StartServer(GrpcServerOptions(), &service);
  ASSERT_NE(server, nullptr);
  std::vector<std::string> names;
  grpc::Status status = roboloop_test::ListServicesByReflection(*Connect(server->target()), &names);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_THAT(names, Contains("roboloop.testing.Echo"));
  EXPECT_THAT(names, Contains("grpc.health.v1.Health"));
  EXPECT_THAT(names, Contains("grpc.reflection.v1alpha.ServerReflection"));
}

}  // namespace
