// Server-side call deadlines (issue 25, req 6): a handler running past its class's deadline is
// cancelled by the server with DEADLINE_EXCEEDED naming the limit and its value, over real gRPC
// on loopback; calls within it and unlimited classes are left alone.
#include "common/grpc_call_limits.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/grpc_server.h"
#include "common/grpc_server_cancellation.h"
#include "tests/common/grpc_test_support.h"

namespace roboloop::common {
namespace {

using ::testing::HasSubstr;

constexpr char kSayMethod[] = "/roboloop.testing.Echo/Say";

class CallLimitsTest : public ::testing::Test {
 protected:
  void Start(const CallLimits& limits, MethodClasses classes = {}) {
    GrpcServerOptions options;
    options.call_limits = limits;
    options.method_classes = std::move(classes);
    auto server = GrpcServer::Create(options, {&service_});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    stub_ = roboloop::testing::Echo::NewStub(
        grpc::CreateChannel(server_->target(), grpc::InsecureChannelCredentials()));
  }

  grpc::Status Say(int sleep_ms) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(20)));
    roboloop::testing::EchoRequest request;
    request.set_sleep_ms(sleep_ms);
    roboloop::testing::EchoReply reply;
    return stub_->Say(&context, request, &reply);
  }

  roboloop_test::EchoService service_;
  std::unique_ptr<GrpcServer> server_;
  std::unique_ptr<roboloop::testing::Echo::Stub> stub_;
};

TEST_F(CallLimitsTest, AUnaryHandlerPastTheDeadlineGetsDeadlineExceededNamingTheLimit) {
  CallLimits limits;
  limits.unary_deadline = absl::Milliseconds(200);
  Start(limits);
  const absl::Time start = absl::Now();
  const grpc::Status status = Say(20000);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("--unary-deadline"));
  EXPECT_THAT(status.error_message(), HasSubstr("200ms"));
  EXPECT_THAT(status.error_message(), HasSubstr(kSayMethod));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_TRUE(Say(0).ok());
}

TEST_F(CallLimitsTest, TheHandlerSeesItsCallCancelled) {
  CallLimits limits;
  limits.unary_deadline = absl::Milliseconds(100);
  Start(limits);
  EXPECT_EQ(Say(20000).error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  for (int i = 0; i < 400 && service_.noticed_cancel.load() == 0; ++i) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_EQ(service_.noticed_cancel.load(), 1);
}

TEST_F(CallLimitsTest, AStreamingCallGetsTheTransferDeadline) {
  CallLimits limits;
  limits.transfer_deadline = absl::Milliseconds(300);
  Start(limits);
  grpc::ClientContext context;
  roboloop::testing::CountRequest request;
  request.set_count(1000);
  request.set_sleep_ms(50);
  auto reader = stub_->Count(&context, request);
  roboloop::testing::CountReply reply;
  int received = 0;
  while (reader->Read(&reply)) ++received;
  const grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("--transfer-deadline"));
  EXPECT_THAT(status.error_message(), HasSubstr("300ms"));
  EXPECT_GT(received, 0);
  EXPECT_LT(received, 1000);
}

TEST_F(CallLimitsTest, AMethodClassedLongGetsTheLongDeadlineInstead) {
  CallLimits limits;
  limits.unary_deadline = absl::Milliseconds(50);
  limits.long_call_deadline = absl::Milliseconds(250);
  Start(limits, {{kSayMethod, CallClass::kLong}});
  EXPECT_TRUE(Say(120).ok());
  const grpc::Status status = Say(20000);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_THAT(status.error_message(), HasSubstr("--long-call-deadline"));
  EXPECT_THAT(status.error_message(), HasSubstr("250ms"));
}

TEST_F(CallLimitsTest, ZeroMeansNoLimit) {
  CallLimits limits;
  limits.unary_deadline = absl::ZeroDuration();
  Start(limits);
  EXPECT_TRUE(Say(300).ok());
}

TEST_F(CallLimitsTest, AWatchedTokenIsCancelledWithTheLimitsMessage) {
  CallLimits limits;
  limits.unary_deadline = absl::Milliseconds(100);
  GrpcServerOptions options;
  options.call_limits = limits;
  std::string reason;
  class TokenEcho final : public roboloop::testing::Echo::Service {
   public:
    explicit TokenEcho(std::string* reason) : reason_(reason) {}
    grpc::Status Say(grpc::ServerContext* context, const roboloop::testing::EchoRequest*,
                     roboloop::testing::EchoReply*) override {
      CancellationToken token;
      const ServerCallCancellationWatch watch = WatchServerCallCancellation(context, &token, absl::Milliseconds(5));
      for (int i = 0; i < 2000 && !token.IsCancelled(); ++i) absl::SleepFor(absl::Milliseconds(5));
      *reason_ = token.IsCancelled() ? token.Reason() : "";
      return grpc::Status::CANCELLED;
    }

   private:
    std::string* reason_;
  } token_echo(&reason);
  auto server = GrpcServer::Create(options, {&token_echo});
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = roboloop::testing::Echo::NewStub(
      grpc::CreateChannel((*server)->target(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  roboloop::testing::EchoReply reply;
  EXPECT_EQ(stub->Say(&context, {}, &reply).error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  (*server)->Shutdown();
  EXPECT_THAT(reason, HasSubstr("--unary-deadline"));
}

TEST(CallLimitsOptions, ANegativeLimitIsRefusedNamingItsFlag) {
  GrpcServerOptions options;
  options.call_limits.receive_idle_timeout = absl::Seconds(-1);
  roboloop_test::EchoService service;
  auto server = GrpcServer::Create(options, {&service});
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(server.status().message(), HasSubstr("--upload-idle-timeout"));
}

}  // namespace
}  // namespace roboloop::common
