// Limits of a served registry (issue 25, req 6) over real gRPC on loopback: the largest upload,
// each caller's storage quota, the idle timeout of a stalled upload and the transfer deadline.
// Each refused or cancelled upload is checked to leave no blob, partial, temp file or catalog row.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/sha256.h"
#include "registry/registry_client.h"
#include "registry/registry_host.h"
#include "tests/util/subprocess.h"

namespace roboloop::registry {
namespace {

using ::testing::HasSubstr;

// Files under `dir` and its subfolders (0 when it is absent).
int FilesUnder(const std::string& dir) {
  if (!std::filesystem::exists(dir)) return 0;
  int count = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) ++count;
  }
  return count;
}

class RegistryLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = roboloop::testing::MakeTempDir("reglimits"); }

  // Serves dir_/store with `service` limits, `call_limits` and a tokens file naming alice and bob
  // (admins: the server needs no method table then).
  void Start(RegistryServiceImpl::Options service, common::CallLimits call_limits = {}) {
    WriteFile("alice.token", "alice-token");
    WriteFile("bob.token", "bob-token");
    WriteFile("tokens.yaml", "tokens:\n  - {name: alice, sha256: " + Sha256Hex("alice-token") +
                                 ", role: admin}\n  - {name: bob, sha256: " + Sha256Hex("bob-token") +
                                 ", role: admin}\n");
    RegistryHost::Options options;
    options.registry.root = Store();
    options.registry.gc_grace = absl::ZeroDuration();
    options.service = service;
    options.server.tokens_file = dir_ + "/tokens.yaml";
    options.server.call_limits = call_limits;
    auto host = RegistryHost::Create(options);
    ASSERT_TRUE(host.ok()) << host.status();
    host_ = std::move(*host);
  }

  // A channel to the server carrying `caller`'s token.
  std::shared_ptr<const common::GrpcChannel> ChannelFor(const std::string& caller) {
    common::GrpcChannelOptions options;
    options.target = host_->target();
    options.token_file = dir_ + "/" + caller + ".token";
    options.retry.max_attempts = 1;
    auto channel = common::GrpcChannel::Create(options);
    EXPECT_TRUE(channel.ok()) << channel.status();
    return channel.ok() ? std::move(*channel) : nullptr;
  }

  std::unique_ptr<RegistryClient> Connect(const std::string& caller) {
    return std::make_unique<RegistryClient>(ChannelFor(caller), RegistryClient::Options{});
  }

  std::string WriteFile(const std::string& name, const std::string& data) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << data;
    return path;
  }

  std::string Store() const { return dir_ + "/store"; }

  // The store holds no partial upload, temp file or blob, and the catalog no upload row.
  void ExpectNothingLeft() {
    EXPECT_EQ(FilesUnder(Store() + "/partial"), 0);
    EXPECT_EQ(FilesUnder(Store() + "/tmp"), 0);
    EXPECT_EQ(FilesUnder(Store() + "/blobs"), 0);
    for (const char* caller : {"alice", "bob"}) {
      EXPECT_EQ(*host_->registry().BytesStoredBy(caller), 0) << caller;
    }
  }

  // Waits up to 10 s for the store's partial uploads to be gone (the handler cleans up after the
  // client already has its status).
  void WaitForNoPartial() {
    for (int i = 0; i < 1000 && FilesUnder(Store() + "/partial") > 0; ++i) absl::SleepFor(absl::Milliseconds(10));
  }

  // Opens an upload of `data` as `caller` and sends its first `sent` bytes (header included).
  struct OpenUpload {
    std::unique_ptr<grpc::ClientContext> context;
    v1::BlobInfo info;
    std::unique_ptr<grpc::ClientWriter<v1::UploadChunk>> writer;
  };
  OpenUpload StartUpload(const std::string& caller, const std::string& data, size_t sent) {
    channel_ = ChannelFor(caller);
    stub_ = v1::RegistryService::NewStub(channel_->channel());
    OpenUpload upload;
    upload.context = channel_->NewContext(absl::Seconds(20));
    upload.writer = stub_->UploadBlob(upload.context.get(), &upload.info);
    v1::UploadChunk chunk;
    chunk.mutable_header()->set_sha256(Sha256Hex(data));
    chunk.mutable_header()->set_size(static_cast<int64_t>(data.size()));
    chunk.set_data(data.substr(0, sent));
    EXPECT_TRUE(upload.writer->Write(chunk));
    return upload;
  }

  std::string dir_;
  std::unique_ptr<RegistryHost> host_;
  std::shared_ptr<const common::GrpcChannel> channel_;
  std::unique_ptr<v1::RegistryService::Stub> stub_;
};

TEST_F(RegistryLimitsTest, AnUploadOverTheSizeLimitIsRefusedAndLeavesNothing) {
  RegistryServiceImpl::Options service;
  service.max_upload_bytes = 1000;
  Start(service);
  auto alice = Connect("alice");
  auto refused = alice->UploadFile(WriteFile("big.bin", std::string(1001, 'b')));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
  EXPECT_THAT(refused.status().message(), HasSubstr("--max-upload-bytes"));
  EXPECT_THAT(refused.status().message(), HasSubstr("1000 bytes"));
  ExpectNothingLeft();
  EXPECT_TRUE(alice->UploadFile(WriteFile("small.bin", std::string(1000, 's'))).ok());
}

TEST_F(RegistryLimitsTest, ACallerOverQuotaIsRefusedWhileAnotherIsNot) {
  RegistryServiceImpl::Options service;
  service.caller_quota_bytes = 1000;
  Start(service);
  auto alice = Connect("alice");
  auto bob = Connect("bob");
  ASSERT_TRUE(alice->UploadFile(WriteFile("a1.bin", std::string(800, '1'))).ok());
  auto refused = alice->UploadFile(WriteFile("a2.bin", std::string(300, '2')));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
  EXPECT_THAT(refused.status().message(), HasSubstr("--storage-quota"));
  EXPECT_THAT(refused.status().message(), HasSubstr("1000 bytes"));
  EXPECT_THAT(refused.status().message(), HasSubstr("'alice'"));
  EXPECT_EQ(FilesUnder(Store() + "/partial"), 0);
  EXPECT_EQ(FilesUnder(Store() + "/blobs"), 1);

  ASSERT_TRUE(bob->UploadFile(WriteFile("b1.bin", std::string(300, '2'))).ok());
  // Content bob stored first costs alice nothing: her upload of it is already present.
  auto shared = alice->UploadFile(WriteFile("a3.bin", std::string(300, '2')));
  ASSERT_TRUE(shared.ok()) << shared.status();
  EXPECT_TRUE(shared->already_present());
  EXPECT_EQ(*host_->registry().BytesStoredBy("alice"), 800);
  EXPECT_EQ(*host_->registry().BytesStoredBy("bob"), 300);
}

TEST_F(RegistryLimitsTest, UsageIsDurableAndCollectedBlobsStopCounting) {
  RegistryServiceImpl::Options service;
  service.caller_quota_bytes = 1000;
  Start(service);
  ASSERT_TRUE(Connect("alice")->UploadFile(WriteFile("a1.bin", std::string(800, '1'))).ok());
  host_.reset();
  Start(service);
  EXPECT_EQ(*host_->registry().BytesStoredBy("alice"), 800);
  v1::GcRequest gc;
  gc.set_apply(true);
  ASSERT_TRUE(host_->registry().CollectGarbage(gc).ok());
  EXPECT_EQ(*host_->registry().BytesStoredBy("alice"), 0);
  EXPECT_TRUE(Connect("alice")->UploadFile(WriteFile("a2.bin", std::string(900, '2'))).ok());
}

TEST_F(RegistryLimitsTest, AStalledUploadIsCancelledAfterTheIdleTimeoutAndLeavesNothing) {
  common::CallLimits limits;
  limits.receive_idle_timeout = absl::Milliseconds(300);
  Start({}, limits);
  const std::string data(4096, 'x');
  OpenUpload upload = StartUpload("alice", data, 1000);
  for (int i = 0; i < 500 && FilesUnder(Store() + "/partial") == 0; ++i) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_EQ(FilesUnder(Store() + "/partial"), 1) << "the first chunk never arrived";
  const absl::Time start = absl::Now();
  const grpc::Status status = upload.writer->Finish();  // the client sends nothing more
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("--upload-idle-timeout"));
  EXPECT_THAT(status.error_message(), HasSubstr("300ms"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  WaitForNoPartial();
  ExpectNothingLeft();
}

TEST_F(RegistryLimitsTest, AnUploadPastTheTransferDeadlineIsCancelledAndLeavesNothing) {
  common::CallLimits limits;
  limits.transfer_deadline = absl::Milliseconds(400);
  limits.receive_idle_timeout = absl::Seconds(10);
  Start({}, limits);
  const std::string data(100000, 'y');
  OpenUpload upload = StartUpload("alice", data, 100);
  v1::UploadChunk chunk;
  for (size_t sent = 100; sent < data.size(); sent += 100) {
    chunk.set_data(data.substr(sent, 100));
    if (!upload.writer->Write(chunk)) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  const grpc::Status status = upload.writer->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("--transfer-deadline"));
  EXPECT_THAT(status.error_message(), HasSubstr("400ms"));
  WaitForNoPartial();
  ExpectNothingLeft();
}

}  // namespace
}  // namespace roboloop::registry
