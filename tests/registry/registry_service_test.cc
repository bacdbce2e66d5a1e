// RegistryService over real sockets: loopback TCP (port 0) and a unix socket, bearer tokens,
// TLS, resumable/oversized/truncated uploads, range downloads and tampered blobs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/fs.h"
#include "common/sha256.h"
#include "registry/registry_client.h"
#include "registry/registry_host.h"
#include "tests/util/subprocess.h"
#include "tests/util/tls_files.h"

namespace roboloop::registry {
namespace {

using ::testing::HasSubstr;

std::string RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string data(n, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  return data;
}

class RegistryServiceTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = roboloop::testing::MakeTempDir("regsvc"); }

  std::unique_ptr<RegistryHost> StartHost(common::GrpcServerOptions server) {
    RegistryHost::Options options;
    options.registry.root = dir_ + "/store";
    options.server = std::move(server);
    auto host = RegistryHost::Create(options);
    EXPECT_TRUE(host.ok()) << host.status();
    return host.ok() ? std::move(*host) : nullptr;
  }

  std::unique_ptr<RegistryClient> Connect(common::GrpcChannelOptions channel, int64_t chunk = 1 << 20) {
    channel.retry.max_attempts = 1;
    RegistryClient::Options options;
    options.chunk_bytes = chunk;
    auto client = RegistryClient::Connect(channel, options);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? std::move(*client) : nullptr;
  }

  std::string WriteFile(const std::string& name, const std::string& data) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << data;
    return path;
  }

  // Uploads, registers, lists, downloads and compares one dataset file.
  void RoundTrip(RegistryClient& client) {
    std::string data = RandomBytes(3 * 1024 * 1024 + 17, 1);
    std::string path = WriteFile("data.bin", data);
    auto blob = client.UploadFile(path);
    ASSERT_TRUE(blob.ok()) << blob.status();
    EXPECT_EQ(blob->sha256(), Sha256Hex(data));
    v1::RegisterDatasetRequest request;
    request.set_name("demo-data");
    request.set_blob_sha256(blob->sha256());
    request.set_metadata_json("{}");
    auto dataset = client.RegisterDataset(request);
    ASSERT_TRUE(dataset.ok()) << dataset.status();
    EXPECT_EQ(dataset->version(), 1);
    auto listed = client.ListDatasets({});
    ASSERT_TRUE(listed.ok()) << listed.status();
    ASSERT_EQ(listed->datasets_size(), 1);
    std::string back = dir_ + "/back.bin";
    ASSERT_TRUE(client.DownloadToFile(blob->sha256(), back).ok());
    EXPECT_EQ(roboloop::testing::ReadWholeFile(back), data);
  }

  std::string dir_;
};

TEST_F(RegistryServiceTest, RoundTripOverLoopbackTcp) {
  auto host = StartHost({});
  ASSERT_NE(host, nullptr);
  EXPECT_THAT(host->target(), HasSubstr("127.0.0.1:"));
  common::GrpcChannelOptions channel;
  channel.target = host->target();
  auto client = Connect(channel);
  ASSERT_NE(client, nullptr);
  RoundTrip(*client);
}

TEST_F(RegistryServiceTest, RoundTripOverUnixSocket) {
  common::GrpcServerOptions server;
  server.listen_address = "unix:" + dir_ + "/registry.sock";
  auto host = StartHost(server);
  ASSERT_NE(host, nullptr);
  common::GrpcChannelOptions channel;
  channel.target = host->target();
  auto client = Connect(channel);
  ASSERT_NE(client, nullptr);
  RoundTrip(*client);
}

TEST_F(RegistryServiceTest, TokenIsRequiredWhenConfigured) {
  common::GrpcServerOptions server;
  server.token_file = WriteFile("token", "s3cret-token\n");
  auto host = StartHost(server);
  ASSERT_NE(host, nullptr);
  common::GrpcChannelOptions channel;
  channel.target = host->target();
  auto anonymous = Connect(channel);
  auto denied = anonymous->ListDatasets({});
  EXPECT_EQ(denied.status().code(), absl::StatusCode::kUnauthenticated);
  channel.token = "wrong-token";
  auto wrong = Connect(channel)->ListDatasets({});
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(Connect(channel)->UploadFile(WriteFile("x", "abc")).status().code(),
            absl::StatusCode::kUnauthenticated);
  channel.token = "s3cret-token";
  auto client = Connect(channel);
  RoundTrip(*client);
}

TEST_F(RegistryServiceTest, TlsWithSelfSignedCertificate) {
  roboloop::testing::TlsFiles tls = roboloop::testing::MakeSelfSignedCert(dir_);
  common::GrpcServerOptions server;
  server.tls_cert_file = tls.cert;
  server.tls_key_file = tls.key;
  server.token_file = WriteFile("token", "tls-token");
  auto host = StartHost(server);
  ASSERT_NE(host, nullptr);
  common::GrpcChannelOptions channel;
  channel.target = host->target();
  channel.tls_root_cert_file = tls.cert;
  channel.tls_server_name = "localhost";
  channel.token = "tls-token";
  auto client = Connect(channel);
  RoundTrip(*client);
  common::GrpcChannelOptions plaintext;
  plaintext.target = host->target();
  plaintext.token = "tls-token";
  plaintext.default_deadline = absl::Seconds(2);
  EXPECT_FALSE(Connect(plaintext)->ListDatasets({}).ok());
}

class RawUploadTest : public RegistryServiceTest {
 protected:
  void SetUp() override {
    RegistryServiceTest::SetUp();
    host_ = StartHost({});
    channel_ = grpc::CreateChannel(host_->target(), grpc::InsecureChannelCredentials());
    stub_ = v1::RegistryService::NewStub(channel_);
  }

  // A client of host_ that has uploaded `data` from a file named `name`; the blob's sha256 goes
  // to `sha256` (empty when the upload failed, which fails the test).
  std::unique_ptr<RegistryClient> ClientThatUploaded(const std::string& name, const std::string& data,
                                                     std::string* sha256) {
    common::GrpcChannelOptions channel;
    channel.target = host_->target();
    auto client = Connect(channel);
    auto blob = client->UploadFile(WriteFile(name, data));
    EXPECT_TRUE(blob.ok()) << blob.status();
    *sha256 = blob.ok() ? blob->sha256() : "";
    return client;
  }

  // Sends `chunks` after a header declaring (`sha256`, `size`, `offset`); returns the status.
  grpc::Status Send(const std::string& sha256, int64_t size, int64_t offset,
                    const std::vector<std::string>& chunks) {
    grpc::ClientContext context;
    v1::BlobInfo info;
    auto writer = stub_->UploadBlob(&context, &info);
    v1::UploadChunk chunk;
    chunk.mutable_header()->set_sha256(sha256);
    chunk.mutable_header()->set_size(size);
    chunk.mutable_header()->set_offset(offset);
    if (chunks.empty()) writer->Write(chunk);
    for (const std::string& data : chunks) {
      chunk.set_data(data);
      if (!writer->Write(chunk)) break;
      chunk.clear_header();
    }
    writer->WritesDone();
    return writer->Finish();
  }

  std::unique_ptr<RegistryHost> host_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::RegistryService::Stub> stub_;
};

TEST_F(RawUploadTest, TruncatedUploadIsRefusedThenResumed) {
  std::string data = RandomBytes(5000, 2);
  std::string sha = Sha256Hex(data);
  grpc::Status truncated = Send(sha, 5000, 0, {data.substr(0, 2000)});
  EXPECT_EQ(truncated.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(truncated.error_message(), HasSubstr("truncated"));
  common::GrpcChannelOptions channel;
  channel.target = host_->target();
  auto client = Connect(channel);
  auto held = client->UploadStatus(sha);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(held->bytes_held(), 2000);
  EXPECT_FALSE(held->complete());
  EXPECT_EQ(client->DownloadToString(sha).status().code(), absl::StatusCode::kNotFound);
  // The client resumes from the 2000 bytes the server holds.
  auto blob = client->UploadFile(WriteFile("resume.bin", data));
  ASSERT_TRUE(blob.ok()) << blob.status();
  EXPECT_FALSE(blob->already_present());
  auto back = client->DownloadToString(sha);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, data);
}

TEST_F(RawUploadTest, OversizedAndMisaddressedUploadsAreRefused) {
  std::string data = RandomBytes(100, 3);
  grpc::Status oversized = Send(Sha256Hex(data), 50, 0, {data});
  EXPECT_EQ(oversized.error_code(), grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_THAT(oversized.error_message(), HasSubstr("oversized"));
  grpc::Status wrong_offset = Send(Sha256Hex(data), 100, 40, {data.substr(40)});
  EXPECT_EQ(wrong_offset.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  grpc::Status wrong_hash = Send(std::string(64, 'a'), 100, 0, {data});
  EXPECT_EQ(wrong_hash.error_code(), grpc::StatusCode::DATA_LOSS);
  grpc::Status bad_hash = Send("../../etc/passwd", 100, 0, {data});
  EXPECT_EQ(bad_hash.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  grpc::ClientContext context;
  v1::BlobInfo info;
  auto writer = stub_->UploadBlob(&context, &info);
  writer->WritesDone();
  EXPECT_EQ(writer->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

// Ranks on several machines may download one blob into a shared cache folder at once, and a
// pid may repeat across machines: a download must not write another's temporary file.
TEST_F(RawUploadTest, DownloadLeavesAnotherProcesssTemporaryFileAlone) {
  const std::string data = RandomBytes(4000, 5);
  std::string sha256;
  auto client = ClientThatUploaded("shared.bin", data, &sha256);
  ASSERT_FALSE(sha256.empty());
  const std::string path = dir_ + "/cache/" + sha256 + ".hdf5";
  ASSERT_TRUE(MakeDirs(dir_ + "/cache").ok());
  // What another machine's process with this pid would be writing under the old naming.
  const std::string other = absl::StrCat(path, ".partial-", getpid());
  std::ofstream(other, std::ios::binary) << "another machine's download in progress";
  auto copy = client->CachedCopy(sha256, dir_ + "/cache", ".hdf5");
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(roboloop::testing::ReadWholeFile(*copy), data);
  EXPECT_EQ(roboloop::testing::ReadWholeFile(other), "another machine's download in progress");
}

// The permission bits of the file at `path`.
mode_t Mode(const std::string& path) {
  struct stat info;
  EXPECT_EQ(stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

// Later runs read a cached copy: it is read-only (one an older version left writable becomes so
// when reused), and one changed anyway (root ignores modes) is fetched again in its place. A
// download the user asked for (`registry get`) stays theirs to write.
TEST_F(RawUploadTest, CachedCopiesAreReadOnlyAndReplacedWhenChanged) {
  const std::string data = RandomBytes(4000, 6);
  std::string sha256;
  auto client = ClientThatUploaded("cached.bin", data, &sha256);
  ASSERT_FALSE(sha256.empty());
  const std::string cache = dir_ + "/cache";
  auto copy = client->CachedCopy(sha256, cache, ".hdf5");
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(Mode(*copy), 0444);
  if (geteuid() != 0) {
    EXPECT_LT(open(copy->c_str(), O_WRONLY), 0) << "a user cannot write into it";
  }

  ASSERT_EQ(chmod(copy->c_str(), 0644), 0);
  ASSERT_EQ(client->CachedCopy(sha256, cache, ".hdf5").value_or(""), *copy);
  EXPECT_EQ(Mode(*copy), 0444) << "an older writable copy";

  ASSERT_EQ(chmod(copy->c_str(), 0644), 0);
  {
    std::fstream f(*copy, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put(static_cast<char>(~data[100]));
  }
  ASSERT_EQ(client->CachedCopy(sha256, cache, ".hdf5").value_or(""), *copy);
  EXPECT_EQ(roboloop::testing::ReadWholeFile(*copy), data) << "a changed copy is fetched again";
  EXPECT_EQ(Mode(*copy), 0444);

  const std::string mine = dir_ + "/mine.bin";
  ASSERT_TRUE(client->DownloadToFile(sha256, mine).ok());
  EXPECT_NE(Mode(mine) & 0200, 0) << "a plain download is the user's file";
}

TEST_F(RawUploadTest, RangeDownloadAndTamperedBlob) {
  std::string data = RandomBytes(10000, 4);
  common::GrpcChannelOptions channel;
  channel.target = host_->target();
  auto client = Connect(channel, /*chunk=*/1024);
  auto blob = client->UploadFile(WriteFile("range.bin", data));
  ASSERT_TRUE(blob.ok());
  std::string part = dir_ + "/part.bin";
  std::vector<std::pair<int64_t, int64_t>> progress;  // (done, total) of each report
  auto record = [&progress](int64_t done, int64_t total) { progress.emplace_back(done, total); };
  ASSERT_TRUE(client->DownloadToFile(blob->sha256(), part, 1000, 2500, record).ok());
  EXPECT_EQ(roboloop::testing::ReadWholeFile(part), data.substr(1000, 2500));
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.back(), std::make_pair(int64_t{2500}, int64_t{2500})) << "a range counts to its own size";
  progress.clear();
  ASSERT_TRUE(client->DownloadToFile(blob->sha256(), part, 9000, 0, record).ok());
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.back(), std::make_pair(int64_t{1000}, int64_t{1000})) << "to the end: the rest of the blob";
  EXPECT_FALSE(client->DownloadToFile(blob->sha256(), part, 9000, 2000).ok());

  std::string on_disk = host_->registry().blobs().BlobPath(blob->sha256());
  {
    std::fstream f(on_disk, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(5000);
    f.put('X');
  }
  auto refused = client->DownloadToString(blob->sha256());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kDataLoss);
  auto verified = client->Verify("");
  ASSERT_TRUE(verified.ok());
  ASSERT_EQ(verified->problems_size(), 1);
  EXPECT_THAT(verified->problems(0), HasSubstr(blob->sha256()));
  std::string kept = dir_ + "/kept.bin";
  EXPECT_FALSE(client->DownloadToFile(blob->sha256(), kept).ok());
  EXPECT_FALSE(PathExists(kept));
}

}  // namespace
}  // namespace roboloop::registry
