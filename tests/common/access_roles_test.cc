// Roles (issue 25, req 5): tokens files are read with every problem reported at once; a caller's
// role gates each method (PERMISSION_DENIED names the role needed); over real sockets the
// handler sees the authenticated caller of its own call; re-reading the file admits new callers
// on an open connection and a bad file keeps the current ones; with an admin client CA, admin
// methods also need a client certificate naming the caller.
#include "common/access_roles.h"

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>

#include "common/grpc_auth.h"
#include "common/grpc_client.h"
#include "common/grpc_server.h"
#include "common/grpc_server_credentials.h"
#include "common/sha256.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/grpc_test_support.h"
#include "tests/util/tls_files.h"

namespace {

using ::roboloop::common::CallVerifier;
using ::roboloop::common::MethodRoles;
using ::roboloop::common::ReadTokensFile;
using ::roboloop::common::Role;
using ::roboloop_test::TempDir;
using ::testing::HasSubstr;

constexpr char kSay[] = "/roboloop.testing.Echo/Say";
constexpr char kCount[] = "/roboloop.testing.Echo/Count";

std::string Entry(const std::string& name, const std::string& token, const std::string& role) {
  return "  - {name: " + name + ", sha256: " + roboloop::Sha256Hex(token) + ", role: " + role + "}\n";
}

std::string Bearer(const std::string& token) { return "Bearer " + token; }

TEST(TokensFileTest, ReadsNamesDigestsAndRoles) {
  TempDir dir;
  roboloop_test::WriteFile(dir.File("tokens.yaml"),
                           "tokens:\n" + Entry("alice", "a-token", "admin") + Entry("ci", "c-token", "write"));
  auto entries = ReadTokensFile(dir.File("tokens.yaml"));
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].name, "alice");
  EXPECT_EQ((*entries)[0].role, Role::kAdmin);
  EXPECT_EQ((*entries)[1].sha256, roboloop::Sha256Hex("c-token"));
  EXPECT_EQ((*entries)[1].role, Role::kWrite);
}

TEST(TokensFileTest, ReportsEveryProblemNamingTheFile) {
  TempDir dir;
  const std::string path = dir.File("tokens.yaml");
  roboloop_test::WriteFile(path, "tokens:\n"
                                 "  - {name: alice, sha256: ABC, role: admin}\n"
                                 "  - {name: alice, sha256: " + roboloop::Sha256Hex("x") + ", role: root}\n"
                                 "  - {sha256: " + roboloop::Sha256Hex("x") + ", role: read, colour: red}\n");
  auto entries = ReadTokensFile(path);
  ASSERT_FALSE(entries.ok());
  const std::string message(entries.status().message());
  EXPECT_THAT(message, HasSubstr(path));
  EXPECT_THAT(message, HasSubstr("tokens[0]: sha256 is not 64 lowercase hex"));
  EXPECT_THAT(message, HasSubstr("tokens[1]: unknown role 'root'"));
  EXPECT_THAT(message, HasSubstr("tokens[1]: name 'alice' is repeated"));
  EXPECT_THAT(message, HasSubstr("tokens[2]: needs a non-empty 'name'"));
  EXPECT_THAT(message, HasSubstr("tokens[2]: unknown key 'colour'"));
  EXPECT_THAT(message, HasSubstr("tokens[2]: sha256 repeats"));
}

TEST(TokensFileTest, MissingOrShapelessFilesAreErrorsNamingTheFile) {
  TempDir dir;
  EXPECT_EQ(ReadTokensFile(dir.File("absent")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(ReadTokensFile(dir.File("absent")).status().message(), HasSubstr(dir.File("absent")));
  roboloop_test::WriteFile(dir.File("list.yaml"), "- alice\n");
  EXPECT_THAT(ReadTokensFile(dir.File("list.yaml")).status().message(), HasSubstr("'tokens' list"));
  roboloop_test::WriteFile(dir.File("empty.yaml"), "tokens: []\n");
  EXPECT_THAT(ReadTokensFile(dir.File("empty.yaml")).status().message(), HasSubstr("empty"));
}

TEST(RoleTest, NamesRoundTripAndUnknownNamesListTheKnownOnes) {
  for (Role role : {Role::kRead, Role::kWrite, Role::kAdmin}) {
    EXPECT_EQ(roboloop::common::ParseRole(roboloop::common::RoleName(role)).value(), role);
  }
  EXPECT_THAT(roboloop::common::ParseRole("owner").status().message(),
              HasSubstr("known: read, write, admin"));
}

class RoleVerifierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.File("tokens.yaml");
    roboloop_test::WriteFile(path_, "tokens:\n" + Entry("rita", "r-token", "read") +
                                        Entry("wes", "w-token", "write") + Entry("ada", "a-token", "admin"));
    auto verifier = CallVerifier::ForTokensFile(path_, {{kSay, Role::kWrite}, {kCount, Role::kRead}});
    ASSERT_TRUE(verifier.ok()) << verifier.status();
    verifier_ = *std::move(verifier);
  }

  absl::StatusOr<std::optional<roboloop::common::Caller>> Judge(const std::string& method,
                                                                const std::string& token) {
    const std::string bearer = Bearer(token);
    return verifier_->Judge(method, {bearer});
  }

  TempDir dir_;
  std::string path_;
  std::unique_ptr<CallVerifier> verifier_;
};

TEST_F(RoleVerifierTest, ACallAboveTheCallersRoleIsDeniedNamingTheRoleNeeded) {
  auto denied = Judge(kSay, "r-token");
  EXPECT_EQ(denied.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(denied.status().message(), HasSubstr("needs role 'write'"));
  EXPECT_THAT(denied.status().message(), HasSubstr("caller 'rita' has role 'read'"));
  auto admitted = Judge(kSay, "w-token");
  ASSERT_TRUE(admitted.ok()) << admitted.status();
  ASSERT_TRUE(admitted->has_value());
  EXPECT_EQ((*admitted)->name, "wes");
  EXPECT_TRUE(Judge(kCount, "r-token").ok());  // read reaches a read method
  EXPECT_TRUE(Judge(kSay, "a-token").ok());    // admin includes write
}

TEST_F(RoleVerifierTest, AMethodMissingFromTheTableNeedsAdmin) {
  EXPECT_EQ(Judge("/roboloop.testing.Echo/Unlisted", "w-token").status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(Judge("/roboloop.testing.Echo/Unlisted", "a-token").ok());
  EXPECT_EQ(Judge(kCount, "unknown").status().code(), absl::StatusCode::kUnauthenticated);
}

TEST_F(RoleVerifierTest, ReloadAdmitsNewCallersAndABadFileKeepsTheCurrentOnes) {
  EXPECT_EQ(Judge(kCount, "n-token").status().code(), absl::StatusCode::kUnauthenticated);
  roboloop_test::WriteFile(path_, "tokens:\n" + Entry("nia", "n-token", "read"));
  ASSERT_TRUE(verifier_->ReloadTokensFile().ok());
  EXPECT_TRUE(Judge(kCount, "n-token").ok());
  EXPECT_EQ(Judge(kCount, "r-token").status().code(), absl::StatusCode::kUnauthenticated);

  roboloop_test::WriteFile(path_, "tokens: [oops\n");
  const absl::Status bad = verifier_->ReloadTokensFile();
  EXPECT_THAT(bad.message(), HasSubstr(path_));
  EXPECT_TRUE(Judge(kCount, "n-token").ok());  // still admitted
}

// Replies to Say with the authenticated caller of the call.
class CallerEchoService final : public roboloop::testing::Echo::Service {
 public:
  grpc::Status Say(grpc::ServerContext* context, const roboloop::testing::EchoRequest*,
                   roboloop::testing::EchoReply* reply) override {
    ++calls_;
    reply->set_text(roboloop::common::AuthenticatedCaller(*context));
    return grpc::Status::OK;
  }

  // Calls that reached Say.
  int calls() const { return calls_.load(); }

 private:
  std::atomic<int> calls_{0};
};

TEST(RolesOverTheWireTest, EachCallSeesItsOwnCallerAndDenialsNeverReachTheHandler) {
  TempDir dir;
  const std::string path = dir.File("tokens.yaml");
  roboloop_test::WriteFile(path, "tokens:\n" + Entry("rita", "r-token", "read") + Entry("wes", "w-token", "write"));
  roboloop::common::GrpcServerOptions options;
  options.tokens_file = path;
  options.method_roles = {{kSay, Role::kWrite}};
  CallerEchoService service;
  auto server = roboloop::common::GrpcServer::Create(options, {&service});
  ASSERT_TRUE(server.ok()) << server.status();
  roboloop::common::GrpcChannelOptions channel_options;
  channel_options.target = (*server)->target();
  channel_options.retry.max_attempts = 1;
  auto channel = roboloop::common::GrpcChannel::Create(channel_options);
  ASSERT_TRUE(channel.ok()) << channel.status();
  auto stub = roboloop::testing::Echo::NewStub((*channel)->channel());
  auto say = [&](const std::string& token, roboloop::testing::EchoReply* reply) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", Bearer(token));
    context.AddMetadata("roboloop-authenticated-caller", "mallory");  // a claim, never believed
    return stub->Say(&context, roboloop::testing::EchoRequest(), reply);
  };
  roboloop::testing::EchoReply reply;
  ASSERT_TRUE(say("w-token", &reply).ok());
  EXPECT_EQ(reply.text(), "wes");
  const grpc::Status denied = say("r-token", &reply);
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(denied.error_message(), HasSubstr("needs role 'write'"));

  // A caller added to the file is admitted on the same connection once the server re-reads it.
  roboloop_test::WriteFile(path, "tokens:\n" + Entry("wes", "w-token", "write") + Entry("xia", "x-token", "admin"));
  EXPECT_EQ(say("x-token", &reply).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  ASSERT_TRUE((*server)->ReloadTokensFile().ok());
  ASSERT_TRUE(say("x-token", &reply).ok());
  EXPECT_EQ(reply.text(), "xia");
  ASSERT_TRUE(say("w-token", &reply).ok());
  EXPECT_EQ(reply.text(), "wes");  // the property belongs to the call, not the connection
}

TEST(RolesOverTheWireTest, WithoutATokensFileNoCallerCanBeClaimed) {
  CallerEchoService service;
  auto server = roboloop::common::GrpcServer::Create(roboloop::common::GrpcServerOptions(), {&service});
  ASSERT_TRUE(server.ok()) << server.status();
  roboloop::common::GrpcChannelOptions channel_options;
  channel_options.target = (*server)->target();
  auto channel = roboloop::common::GrpcChannel::Create(channel_options);
  ASSERT_TRUE(channel.ok()) << channel.status();
  grpc::ClientContext context;
  context.AddMetadata("roboloop-authenticated-caller", "mallory");
  roboloop::testing::EchoReply reply;
  reply.set_text("unset");
  ASSERT_TRUE(roboloop::testing::Echo::NewStub((*channel)->channel())
                  ->Say(&context, roboloop::testing::EchoRequest(), &reply)
                  .ok());
  EXPECT_EQ(reply.text(), "");
}

// A TLS server whose admin callers need a client certificate from `ca` (the second factor).
class AdminCertificateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_cert_ = roboloop::testing::MakeSelfSignedCert(folder(), "server");
    ca_ = roboloop::testing::MakeSelfSignedCert(folder(), "admin-ca");
    roboloop_test::WriteFile(dir_.File("tokens.yaml"), "tokens:\n" + Entry("ada", "a-token", "admin") +
                                                           Entry("wes", "w-token", "write"));
    roboloop::common::GrpcServerOptions options;
    options.tokens_file = dir_.File("tokens.yaml");
    options.method_roles = {{kSay, Role::kAdmin}, {kCount, Role::kWrite}};
    options.tls_cert_file = server_cert_.cert;
    options.tls_key_file = server_cert_.key;
    options.admin_client_ca_file = ca_.cert;
    auto server = roboloop::common::GrpcServer::Create(options, {&service_});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  std::string folder() const { return std::filesystem::path(dir_.File("x")).parent_path().string(); }

  // Calls Say with `token`, presenting `client` when it is set.
  grpc::Status Say(const std::string& token, const roboloop::testing::TlsFiles* client,
                   roboloop::testing::EchoReply* reply) {
    roboloop::common::GrpcChannelOptions options;
    options.target = server_->target();
    options.token = token;
    options.tls_root_cert_file = server_cert_.cert;
    options.tls_server_name = "localhost";
    options.retry.max_attempts = 1;
    if (client != nullptr) {
      options.tls_client_cert_file = client->cert;
      options.tls_client_key_file = client->key;
    }
    auto channel = roboloop::common::GrpcChannel::Create(options);
    EXPECT_TRUE(channel.ok()) << channel.status();
    if (!channel.ok()) return grpc::Status(grpc::StatusCode::INTERNAL, "no channel");
    grpc::ClientContext context;
    context.AddMetadata("authorization", Bearer(token));
    return roboloop::testing::Echo::NewStub((*channel)->channel())
        ->Say(&context, roboloop::testing::EchoRequest(), reply);
  }

  TempDir dir_;
  roboloop::testing::TlsFiles server_cert_;
  roboloop::testing::TlsFiles ca_;
  CallerEchoService service_;
  std::unique_ptr<roboloop::common::GrpcServer> server_;
};

TEST_F(AdminCertificateTest, AdminCallsNeedACertificateNamingTheCaller) {
  roboloop::testing::EchoReply reply;
  const grpc::Status bare = Say("a-token", nullptr, &reply);
  EXPECT_EQ(bare.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(bare.error_message(), HasSubstr("client certificate for 'ada'"));
  EXPECT_THAT(bare.error_message(), HasSubstr("presented none"));

  const roboloop::testing::TlsFiles ada = roboloop::testing::MakeClientCertSignedBy(ca_, folder(), "ada", "ada");
  ASSERT_TRUE(Say("a-token", &ada, &reply).ok());
  EXPECT_EQ(reply.text(), "ada");

  const roboloop::testing::TlsFiles bob = roboloop::testing::MakeClientCertSignedBy(ca_, folder(), "bob", "bob");
  const grpc::Status borrowed = Say("a-token", &bob, &reply);
  EXPECT_EQ(borrowed.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(borrowed.error_message(), HasSubstr("presented one for 'bob'"));
}

TEST_F(AdminCertificateTest, ACertificateFromAnotherCaIsRefusedAtTheHandshake) {
  const roboloop::testing::TlsFiles rogue_ca = roboloop::testing::MakeSelfSignedCert(folder(), "rogue-ca");
  const roboloop::testing::TlsFiles forged =
      roboloop::testing::MakeClientCertSignedBy(rogue_ca, folder(), "forged", "ada");
  roboloop::testing::EchoReply reply;
  const grpc::Status status = Say("a-token", &forged, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  EXPECT_EQ(service_.calls(), 0);
}

TEST_F(AdminCertificateTest, AnAdminCaNeedsATokensFileAndTls) {
  roboloop::common::GrpcServerOptions options;
  options.admin_client_ca_file = ca_.cert;
  options.tokens_file = dir_.File("tokens.yaml");
  auto plaintext = roboloop::common::GrpcServer::Create(options, {&service_});
  EXPECT_THAT(plaintext.status().message(), HasSubstr("needs a tokens file and TLS"));
  roboloop::common::GrpcChannelOptions channel;
  channel.target = server_->target();
  channel.tls_client_cert_file = ca_.cert;
  channel.tls_client_key_file = ca_.key;
  EXPECT_THAT(roboloop::common::GrpcChannel::Create(channel).status().message(), HasSubstr("needs TLS"));
}

TEST(RolesOverTheWireTest, TokenAndTokensFileTogetherAreRefused) {
  TempDir dir;
  roboloop::common::GrpcServerOptions options;
  options.token_file = dir.File("token");
  options.tokens_file = dir.File("tokens.yaml");
  CallerEchoService service;
  auto server = roboloop::common::GrpcServer::Create(options, {&service});
  EXPECT_THAT(server.status().message(), HasSubstr("not both"));
}

}  // namespace
