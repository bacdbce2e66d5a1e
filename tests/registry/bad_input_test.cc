// Bad input at the Registry boundary: each gets a clear error naming the input, and nothing
// already stored is lost.
#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "common/sha256.h"
#include "tests/registry/registry_fixture.h"

namespace roboloop::registry {
namespace {

using testing::HasSubstr;

std::string Message(const absl::Status& status) { return std::string(status.message()); }

class BadInputTest : public testing_util::RegistryFixture {
 protected:
  void SetUp() override {
    RegistryFixture::SetUp();
    auto stored = Register("good-model", 1);
    ASSERT_TRUE(stored.ok()) << stored.status();
    stored_ = *stored;
  }
  void TearDown() override {
    v1::GetRequest get;
    get.set_ref("good-model:v1");
    auto still = registry_->GetCheckpoint(get);
    ASSERT_TRUE(still.ok()) << "bad input lost a stored checkpoint: " << still.status();
    EXPECT_EQ(still->id(), stored_.id());
  }
  v1::Checkpoint stored_;
};

TEST_F(BadInputTest, InvalidNamesAndPathTraversal) {
  v1::ListCheckpointsRequest list;
  list.set_model("../../etc");
  EXPECT_THAT(Message(registry_->ListCheckpoints(list).status()), HasSubstr("invalid model name"));
  v1::SetAliasRequest set;
  set.set_model("good-model");
  set.set_alias("../champion");
  set.set_ref("good-model:v1");
  set.set_reason("x");
  EXPECT_THAT(Message(registry_->SetAlias(set).status()), HasSubstr("invalid alias name"));
  v1::GetRequest get;
  get.set_ref("../../etc/passwd@latest");
  EXPECT_EQ(registry_->GetCheckpoint(get).status().code(), absl::StatusCode::kInvalidArgument);
  v1::UploadStatusRequest status;
  status.set_sha256("../../catalog.db");
  EXPECT_THAT(Message(registry_->UploadStatus(status).status()), HasSubstr("invalid sha256"));
  v1::DownloadRequest download;
  download.set_sha256("../catalog.db");
  EXPECT_EQ(registry_->OpenBlob(download).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(BadInputTest, UnknownReferencesListCloseMatches) {
  v1::GetRequest get;
  get.set_ref("good-modl@latest");
  auto miss = registry_->GetCheckpoint(get);
  EXPECT_EQ(miss.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(miss.status()), HasSubstr("close matches: good-model"));
  v1::LineageRequest lineage;
  lineage.set_ref("good-mode:v1");
  EXPECT_THAT(Message(registry_->Lineage(lineage).status()), HasSubstr("good-model"));
}

TEST_F(BadInputTest, OversizedAndTruncatedUploads) {
  std::string data = "twelve bytes";
  std::string sha = Sha256Hex(data);
  absl::Status oversized = registry_->AppendUpload(sha, 5, 0, data);
  EXPECT_EQ(oversized.code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(Message(oversized), HasSubstr("oversized"));
  ASSERT_TRUE(registry_->AppendUpload(sha, 12, 0, data.substr(0, 6)).ok());
  auto truncated = registry_->FinishUpload(sha, 12);
  EXPECT_EQ(truncated.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(truncated.status()), HasSubstr("truncated: 6 of 12"));
  v1::UploadStatusRequest status;
  status.set_sha256(sha);
  EXPECT_FALSE(registry_->UploadStatus(status)->complete());
  ASSERT_TRUE(registry_->AppendUpload(sha, 12, 6, data.substr(6)).ok());
  EXPECT_TRUE(registry_->FinishUpload(sha, 12).ok());
  EXPECT_EQ(registry_->AppendUpload(sha, -1, 0, "").code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(BadInputTest, MalformedManifests) {
  v1::RegisterCheckpointRequest request;
  for (const char* text : {"", "{", "[]", "{\"format_version\": 1}"}) {
    request.set_manifest_json(text);
    auto result = registry_->RegisterCheckpoint(request);
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(Message(result.status()), HasSubstr("manifest")) << text;
  }
}

TEST_F(BadInputTest, AlteredBlobIsReportedAndRefused) {
  std::string sha = stored_.blobs(0).sha256();
  std::string path = registry_->blobs().BlobPath(sha);
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  ASSERT_TRUE(WriteFileAtomic(path, "tampered").ok());
  v1::VerifyRequest verify;
  verify.set_ref("good-model:v1");
  auto report = registry_->Verify(verify);
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->problems().empty());
  v1::DownloadRequest download;
  download.set_sha256(sha);
  auto reader = registry_->OpenBlob(download);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->Read(kDefaultChunkSize).status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(BadInputTest, ConcurrentThreadsShareOneRegistry) {
  std::vector<std::thread> threads;
  std::vector<absl::Status> results(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([this, t, &results] {
      for (int i = 0; i < 10 && results[t].ok(); ++i) {
        results[t] = Register("threaded", 1000 * t + i).status();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const absl::Status& status : results) EXPECT_TRUE(status.ok()) << status;
  v1::ListCheckpointsRequest list;
  list.set_model("threaded");
  EXPECT_EQ(registry_->ListCheckpoints(list)->checkpoints_size(), 40);
}

}  // namespace
}  // namespace roboloop::registry
