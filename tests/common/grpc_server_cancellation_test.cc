// WatchServerCallCancellation (issue 27): a sync handler's token is cancelled when its client
// gives up on the call, and left alone for a call that completes.
#include "common/grpc_server_cancellation.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "absl/synchronization/notification.h"
#include "common/grpc_server.h"
#include "roboloop/testing/echo.grpc.pb.h"
#include "tests/util/subprocess.h"

namespace roboloop::common {
namespace {

// Say waits up to sleep_ms for its call's token, and records what it saw.
class WatchingEchoService final : public roboloop::testing::Echo::Service {
 public:
  grpc::Status Say(grpc::ServerContext* context, const roboloop::testing::EchoRequest* request,
                   roboloop::testing::EchoReply* reply) override {
    CancellationToken token;
    const ServerCallCancellationWatch watch = WatchServerCallCancellation(context, &token, absl::Milliseconds(5));
    absl::Notification cancelled;
    const CancellationCallback on_cancel = token.OnCancel([&] { cancelled.Notify(); });
    cancelled.WaitForNotificationWithTimeout(absl::Milliseconds(request->sleep_ms()));
    {
      absl::MutexLock lock(&mu_);
      reasons_.push_back(token.IsCancelled() ? token.Reason() : "");
    }
    done_.Notify();
    reply->set_text(request->text());
    return grpc::Status::OK;
  }

  // Waits for a Say to finish and returns its token's reason ("" = not cancelled).
  std::string WaitForReason() {
    EXPECT_TRUE(done_.WaitForNotificationWithTimeout(absl::Seconds(20)));
    absl::MutexLock lock(&mu_);
    return reasons_.empty() ? "<none>" : reasons_.back();
  }

 private:
  absl::Notification done_;
  absl::Mutex mu_;
  std::vector<std::string> reasons_;
};

class ServerCallCancellationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GrpcServerOptions options;
    options.listen_address = "unix:" + roboloop::testing::MakeTempDir("call_cancel") + "/echo.sock";
    auto server = GrpcServer::Create(options, {&service_});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    stub_ = roboloop::testing::Echo::NewStub(
        grpc::CreateChannel(server_->target(), grpc::InsecureChannelCredentials()));
  }

  grpc::Status Say(int sleep_ms, absl::Duration deadline) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
    roboloop::testing::EchoRequest request;
    request.set_text("hi");
    request.set_sleep_ms(sleep_ms);
    roboloop::testing::EchoReply reply;
    return stub_->Say(&context, request, &reply);
  }

  WatchingEchoService service_;
  std::unique_ptr<GrpcServer> server_;
  std::unique_ptr<roboloop::testing::Echo::Stub> stub_;
};

TEST_F(ServerCallCancellationTest, AnAbandonedCallCancelsTheToken) {
  const absl::Time start = absl::Now();
  EXPECT_EQ(Say(60000, absl::Milliseconds(300)).error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(service_.WaitForReason(), "the client cancelled the call");
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));
}

TEST_F(ServerCallCancellationTest, ACompletedCallLeavesTheTokenAlone) {
  EXPECT_TRUE(Say(50, absl::Seconds(30)).ok());
  EXPECT_EQ(service_.WaitForReason(), "");
}

}  // namespace
}  // namespace roboloop::common
