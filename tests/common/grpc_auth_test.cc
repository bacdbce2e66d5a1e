// Bearer-token authentication of GrpcServer over real loopback sockets: unary and streaming
// calls with no, wrong and right tokens never reach a refused handler, on plaintext and TLS;
// health stays open; token files are validated; new token files are random and private.
#include "common/grpc_auth.h"

#include <sys/stat.h>

#include <memory>
#include <string>
#include <vector>

#include "common/grpc_client.h"
#include "common/grpc_server.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/common/grpc_test_support.h"

namespace {

using ::roboloop::common::GrpcChannel;
using ::roboloop::common::GrpcChannelOptions;
using ::roboloop::common::GrpcServer;
using ::roboloop::common::GrpcServerOptions;
using ::roboloop_test::EchoService;
using ::roboloop_test::TempDir;
using ::testing::HasSubstr;

constexpr char kToken[] = "s3cr3t-t0ken";

// Runs every case against the synchronous (false) and the callback (true) test service.
class AuthTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    roboloop_test::WriteFile(dir_.File("token"), std::string(kToken) + "\n");
    GrpcServerOptions options;
    options.token_file = dir_.File("token");
    grpc::Service* service = GetParam() ? static_cast<grpc::Service*>(&callback_service_)
                                        : static_cast<grpc::Service*>(&sync_service_);
    auto server = GrpcServer::Create(options, {service});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  std::unique_ptr<GrpcChannel> Channel(const std::string& token) {
    GrpcChannelOptions options;
    options.target = server_->target();
    options.token = token;
    auto channel = GrpcChannel::Create(options);
    EXPECT_TRUE(channel.ok()) << channel.status();
    return *std::move(channel);
  }

  grpc::Status Say(const std::string& token) {
    auto channel = Channel(token);
    auto stub = roboloop::testing::Echo::NewStub(channel->channel());
    roboloop::testing::EchoRequest request;
    request.set_text("hello");
    roboloop::testing::EchoReply reply;
    auto context = channel->NewContext();
    grpc::Status status = stub->Say(context.get(), request, &reply);
    if (status.ok()) {
      EXPECT_EQ(reply.text(), "hello");
    }
    return status;
  }

  grpc::Status Count(const std::string& token, int* received) {
    auto channel = Channel(token);
    auto stub = roboloop::testing::Echo::NewStub(channel->channel());
    roboloop::testing::CountRequest request;
    request.set_count(3);
    auto context = channel->NewContext();
    auto reader = stub->Count(context.get(), request);
    roboloop::testing::CountReply reply;
    *received = 0;
    while (reader->Read(&reply)) ++*received;
    return reader->Finish();
  }

  // Makes one admitted call, then returns how many handler bodies ran besides it: the refused
  // calls made before would have been dispatched by then had they reached a handler.
  int HandlersRunByRefusedCalls() {
    EXPECT_TRUE(Say(kToken).ok());
    return counters().executed - 1;
  }

  const roboloop_test::CallCounters& counters() const {
    return GetParam() ? static_cast<const roboloop_test::CallCounters&>(callback_service_)
                      : static_cast<const roboloop_test::CallCounters&>(sync_service_);
  }

  TempDir dir_;
  EchoService sync_service_;
  roboloop_test::CallbackEchoService callback_service_;
  std::unique_ptr<GrpcServer> server_;
};

INSTANTIATE_TEST_SUITE_P(SyncAndCallback, AuthTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Callback" : "Sync";
                         });

TEST_P(AuthTest, UnaryWithoutTokenIsUnauthenticatedAndNotExecuted) {
  grpc::Status status = Say("");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(status.error_message(), HasSubstr("missing bearer token"));
  EXPECT_EQ(HandlersRunByRefusedCalls(), 0);
}

TEST_P(AuthTest, UnaryWithWrongTokenIsUnauthenticatedAndNotExecuted) {
  grpc::Status status = Say("s3cr3t-t0kem");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(status.error_message(), HasSubstr("invalid bearer token"));
  EXPECT_EQ(HandlersRunByRefusedCalls(), 0);
}

TEST_P(AuthTest, UnaryWithTokenPrefixIsRejected) {
  EXPECT_EQ(Say("s3cr3t").error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

TEST_P(AuthTest, UnaryWithRightTokenSucceeds) {
  grpc::Status status = Say(kToken);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(counters().executed, 1);
}

TEST_P(AuthTest, StreamingWithoutOrWrongTokenIsUnauthenticated) {
  int received = -1;
  grpc::Status missing = Count("", &received);
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(missing.error_message(), HasSubstr("missing bearer token"));
  EXPECT_EQ(received, 0);
  grpc::Status wrong = Count("wrong", &received);
  EXPECT_EQ(wrong.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(wrong.error_message(), HasSubstr("invalid bearer token"));
  EXPECT_EQ(received, 0);
  EXPECT_EQ(HandlersRunByRefusedCalls(), 0);
}

TEST_P(AuthTest, StreamingWithRightTokenSucceeds) {
  int received = 0;
  grpc::Status status = Count(kToken, &received);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(received, 3);
}

TEST_P(AuthTest, MalformedAuthorizationIsRejected) {
  auto channel = Channel("");
  auto stub = roboloop::testing::Echo::NewStub(channel->channel());
  auto context = channel->NewContext();
  context->AddMetadata("authorization", std::string("Basic ") + kToken);
  roboloop::testing::EchoReply reply;
  grpc::Status status = stub->Say(context.get(), roboloop::testing::EchoRequest(), &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(status.error_message(), HasSubstr("Bearer <token>"));
}

TEST_P(AuthTest, RepeatedAuthorizationIsRejected) {
  auto channel = Channel(kToken);
  auto stub = roboloop::testing::Echo::NewStub(channel->channel());
  auto context = channel->NewContext();
  context->AddMetadata("authorization", std::string("Bearer ") + kToken);
  roboloop::testing::EchoReply reply;
  grpc::Status status = stub->Say(context.get(), roboloop::testing::EchoRequest(), &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(status.error_message(), HasSubstr("more than one"));
  EXPECT_EQ(HandlersRunByRefusedCalls(), 0);
}

TEST_P(AuthTest, HealthIsOpenWithoutToken) {
  auto channel = Channel("");
  EXPECT_TRUE(channel->CheckServing("").ok());
  EXPECT_TRUE(channel->CheckServing("roboloop.testing.Echo").ok());
}

TEST_P(AuthTest, ReflectionNeedsTheToken) {
  std::vector<std::string> names;
  grpc::Status refused = roboloop_test::ListServicesByReflection(*Channel(""), &names);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(names.empty());
  grpc::Status admitted = roboloop_test::ListServicesByReflection(*Channel(kToken), &names);
  EXPECT_TRUE(admitted.ok()) << admitted.error_message();
  EXPECT_THAT(names, ::testing::Contains("roboloop.testing.Echo"));
}

TEST(TlsAuthTest, TlsServerRefusesMissingTokenAndAdmitsTheRightOne) {
  TempDir dir;
  roboloop_test::WriteFile(dir.File("token"), kToken);
  const roboloop_test::TestCertificate cert = roboloop_test::MakeSelfSignedCertificate(dir, "tls");
  GrpcServerOptions server_options;
  server_options.token_file = dir.File("token");
  server_options.tls_cert_file = cert.cert_file;
  server_options.tls_key_file = cert.key_file;
  EchoService service;
  auto server = GrpcServer::Create(server_options, {&service});
  ASSERT_TRUE(server.ok()) << server.status();
  auto say = [&](const std::string& token) {
    GrpcChannelOptions options;
    options.target = (*server)->target();
    options.token = token;
    options.tls_root_cert_file = cert.cert_file;
    options.tls_server_name = "localhost";
    auto channel = GrpcChannel::Create(options);
    EXPECT_TRUE(channel.ok()) << channel.status();
    auto context = (*channel)->NewContext();
    roboloop::testing::EchoReply reply;
    return roboloop::testing::Echo::NewStub((*channel)->channel())
        ->Say(context.get(), roboloop::testing::EchoRequest(), &reply);
  };
  EXPECT_EQ(say("").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(service.executed, 0);
  EXPECT_TRUE(say(kToken).ok());
  EXPECT_EQ(service.executed, 1);
}

TEST(CallVerifierTest, JudgesTheAuthorizationValuesOfACall) {
  const auto verifier = roboloop::common::CallVerifier::ForToken(kToken);
  constexpr char kMethod[] = "/roboloop.testing.Echo/Say";
  const absl::string_view right = "Bearer s3cr3t-t0ken";
  const absl::string_view lower_case = "bearer s3cr3t-t0ken";
  const absl::string_view wrong = "Bearer s3cr3t";
  EXPECT_TRUE(verifier->Judge(kMethod, {right}).ok());
  EXPECT_TRUE(verifier->Judge(kMethod, {lower_case}).ok());
  EXPECT_FALSE(verifier->Judge(kMethod, {right}).value().has_value());  // one token: no caller
  EXPECT_THAT(verifier->Judge(kMethod, {}).status().message(), HasSubstr("missing bearer token"));
  EXPECT_THAT(verifier->Judge(kMethod, {wrong}).status().message(), HasSubstr("invalid bearer token"));
  EXPECT_THAT(verifier->Judge(kMethod, {right, right}).status().message(), HasSubstr("more than one"));
  EXPECT_EQ(verifier->Judge(kMethod, {wrong}).status().code(), absl::StatusCode::kUnauthenticated);
}

TEST(CallVerifierTest, OnlyHealthChecksArePublic) {
  const auto verifier = roboloop::common::CallVerifier::ForToken(kToken);
  EXPECT_TRUE(verifier->Judge("/grpc.health.v1.Health/Check", {}).ok());
  EXPECT_TRUE(verifier->Judge("/grpc.health.v1.Health/Watch", {}).ok());
  EXPECT_FALSE(verifier->Judge("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", {})
                   .ok());
  EXPECT_FALSE(verifier->Judge("/grpc.health.v1.HealthX/Check", {}).ok());
  EXPECT_FALSE(verifier->Judge("", {}).ok());
}

TEST(TokenFileTest, ReadsAndTrimsToken) {
  TempDir dir;
  roboloop_test::WriteFile(dir.File("t"), "  abc.DEF-123\n\n");
  auto token = roboloop::common::ReadTokenFile(dir.File("t"));
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(*token, "abc.DEF-123");
}

TEST(TokenFileTest, MissingEmptyOrSpacedTokenFilesAreErrorsNamingTheFile) {
  TempDir dir;
  const std::string missing = dir.File("missing");
  EXPECT_THAT(roboloop::common::ReadTokenFile(missing).status().message(), HasSubstr(missing));
  roboloop_test::WriteFile(dir.File("empty"), "\n");
  auto empty = roboloop::common::ReadTokenFile(dir.File("empty"));
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(empty.status().message(), HasSubstr("empty"));
  roboloop_test::WriteFile(dir.File("spaced"), "two words");
  EXPECT_FALSE(roboloop::common::ReadTokenFile(dir.File("spaced")).ok());
}

TEST(TokenFileTest, ANewTokenIsRandomPrivateReadableAndNeverReplacesAFile) {
  TempDir dir;
  ASSERT_TRUE(roboloop::common::WriteNewTokenFile(dir.File("a")).ok());
  ASSERT_TRUE(roboloop::common::WriteNewTokenFile(dir.File("b")).ok());
  auto a = roboloop::common::ReadTokenFile(dir.File("a"));
  auto b = roboloop::common::ReadTokenFile(dir.File("b"));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->size(), 64u);
  EXPECT_NE(*a, *b);
  struct stat info;
  ASSERT_EQ(::stat(dir.File("a").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  const absl::Status again = roboloop::common::WriteNewTokenFile(dir.File("a"));
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(again.message(), HasSubstr(dir.File("a")));
  EXPECT_EQ(*roboloop::common::ReadTokenFile(dir.File("a")), *a);
  EXPECT_THAT(roboloop::common::WriteNewTokenFile(dir.File("no/such/dir")).message(), HasSubstr("no/such/dir"));
}

TEST(TokenFileTest, ServerWithUnreadableTokenFileDoesNotStart) {
  TempDir dir;
  GrpcServerOptions options;
  options.token_file = dir.File("nope");
  auto server = GrpcServer::Create(options, {});
  EXPECT_FALSE(server.ok());
  EXPECT_THAT(server.status().message(), HasSubstr(dir.File("nope")));
}

}  // namespace
