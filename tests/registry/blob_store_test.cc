#include "registry/blob_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/fs.h"
#include "common/sha256.h"
#include "tests/registry/test_util.h"

namespace roboloop::registry {
namespace {

using testing_util::ScopedDir;

std::string Pattern(size_t size, int seed) {
  std::string data(size, '\0');
  for (size_t i = 0; i < size; ++i) data[i] = static_cast<char>((i * 131 + seed * 7) % 251);
  return data;
}

void Corrupt(const std::string& path) {
  std::filesystem::permissions(path, std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::add);
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(3);
  file.put('!');
}

class BlobStoreTest : public testing::Test {
 protected:
  void SetUp() override {
    auto store = BlobStore::Create({dir_.path()});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }
  ScopedDir dir_;
  std::unique_ptr<BlobStore> store_;
};

TEST_F(BlobStoreTest, PutStoresUnderShardedHashAndDeduplicates) {
  std::string data = Pattern(3 << 20, 1);
  auto first = store_->Put(data);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->sha256, Sha256Hex(data));
  EXPECT_EQ(first->size, static_cast<int64_t>(data.size()));
  EXPECT_FALSE(first->already_present);
  std::string expected_path = JoinPath(dir_.path(), "blobs/" + first->sha256.substr(0, 2) + "/" +
                                                        first->sha256.substr(2, 2) + "/" +
                                                        first->sha256);
  EXPECT_EQ(store_->BlobPath(first->sha256), expected_path);
  EXPECT_TRUE(std::filesystem::exists(expected_path));

  auto second = store_->Put(data);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->already_present);
  auto listed = store_->List();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].size, static_cast<int64_t>(data.size()));
  EXPECT_TRUE(ListDir(JoinPath(dir_.path(), "tmp"))->empty());
}

TEST_F(BlobStoreTest, PutFileAndReadAllRoundTrip) {
  std::string data = Pattern(1234567, 2);
  std::string source = JoinPath(dir_.path(), "source.bin");
  ASSERT_TRUE(WriteFileAtomic(source, data).ok());
  auto put = store_->PutFile(source);
  ASSERT_TRUE(put.ok()) << put.status();
  auto read = store_->ReadAll(put->sha256);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, data);
  EXPECT_TRUE(store_->Verify(put->sha256).ok());
  EXPECT_FALSE(store_->PutFile(JoinPath(dir_.path(), "missing")).ok());
}

TEST_F(BlobStoreTest, EmptyBlobIsStoredAndRead) {
  auto put = store_->Put("");
  ASSERT_TRUE(put.ok());
  EXPECT_EQ(put->sha256, Sha256Hex(""));
  auto read = store_->ReadAll(put->sha256);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, "");
}

TEST_F(BlobStoreTest, StatAndContainsReportAbsence) {
  std::string absent = Sha256Hex("absent");
  EXPECT_FALSE(store_->Contains(absent));
  EXPECT_EQ(store_->Stat(absent).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->OpenReader(absent).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->Verify(absent).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->Remove(absent).code(), absl::StatusCode::kNotFound);
}

TEST_F(BlobStoreTest, RangesReturnExactBytes) {
  std::string data = Pattern(10000, 3);
  auto put = store_->Put(data);
  ASSERT_TRUE(put.ok());
  auto reader = store_->OpenReader(put->sha256, 1000, 2500);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->blob_size(), 10000);
  EXPECT_EQ((*reader)->range_length(), 2500);
  std::string got;
  while (true) {
    auto chunk = (*reader)->Read(700);
    ASSERT_TRUE(chunk.ok());
    if (chunk->empty()) break;
    EXPECT_LE(chunk->size(), 700u);
    got += *chunk;
  }
  EXPECT_EQ(got, data.substr(1000, 2500));

  auto tail = store_->OpenReader(put->sha256, 9000, 0);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(*(*tail)->Read(1 << 20), data.substr(9000));
  EXPECT_EQ(store_->OpenReader(put->sha256, 9000, 1001).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(store_->OpenReader(put->sha256, 10001, 0).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(store_->OpenReader(put->sha256, -1, 0).status().code(), absl::StatusCode::kOutOfRange);
}

TEST_F(BlobStoreTest, AlteredBlobIsRefusedByReadsAndVerify) {
  std::string data = Pattern(5000, 4);
  auto put = store_->Put(data);
  ASSERT_TRUE(put.ok());
  Corrupt(store_->BlobPath(put->sha256));

  absl::Status verified = store_->Verify(put->sha256);
  EXPECT_EQ(verified.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(verified.message().find(put->sha256), std::string::npos);
  EXPECT_NE(verified.message().find("corrupt"), std::string::npos);

  auto whole = store_->ReadAll(put->sha256);
  EXPECT_EQ(whole.status().code(), absl::StatusCode::kDataLoss);

  // The chunk completing the blob is withheld: the caller never receives all corrupt bytes.
  auto reader = store_->OpenReader(put->sha256);
  ASSERT_TRUE(reader.ok());
  auto first = (*reader)->Read(4000);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ((*reader)->Read(4000).status().code(), absl::StatusCode::kDataLoss);

  EXPECT_EQ(store_->OpenReader(put->sha256, 10, 10).status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(BlobStoreTest, ResumableUploadBecomesVisibleOnlyAfterFinish) {
  std::string data = Pattern(300000, 5);
  std::string sha = Sha256Hex(data);
  int64_t size = static_cast<int64_t>(data.size());
  EXPECT_EQ(*store_->BytesHeld(sha), 0);
  ASSERT_TRUE(store_->Append(sha, size, 0, data.substr(0, 100000)).ok());
  EXPECT_EQ(*store_->BytesHeld(sha), 100000);
  EXPECT_FALSE(store_->Contains(sha));
  EXPECT_FALSE(std::filesystem::exists(store_->BlobPath(sha)));

  // A second session resumes where the store says.
  int64_t held = *store_->BytesHeld(sha);
  ASSERT_TRUE(store_->Append(sha, size, held, data.substr(held)).ok());
  auto partials = store_->ListPartials();
  ASSERT_TRUE(partials.ok());
  ASSERT_EQ(partials->size(), 1u);
  EXPECT_EQ((*partials)[0].bytes_held, size);

  auto finished = store_->Finish(sha, size);
  ASSERT_TRUE(finished.ok()) << finished.status();
  EXPECT_FALSE(finished->already_present);
  EXPECT_TRUE(store_->Contains(sha));
  EXPECT_EQ(*store_->ReadAll(sha), data);
  EXPECT_EQ(*store_->BytesHeld(sha), 0);
  EXPECT_EQ(store_->Append(sha, size, 0, "x").code(), absl::StatusCode::kAlreadyExists);
  auto again = store_->Finish(sha, size);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->already_present);
}

TEST_F(BlobStoreTest, AppendAtWrongOffsetIsRefused) {
  std::string data = Pattern(1000, 6);
  std::string sha = Sha256Hex(data);
  ASSERT_TRUE(store_->Append(sha, 1000, 0, data.substr(0, 400)).ok());
  absl::Status gap = store_->Append(sha, 1000, 500, data.substr(500));
  EXPECT_EQ(gap.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(gap.message().find("holds 400"), std::string::npos);
  EXPECT_EQ(*store_->BytesHeld(sha), 400);
}

TEST_F(BlobStoreTest, OversizedUploadIsRefusedAndWritesNothing) {
  std::string data = Pattern(1000, 7);
  std::string sha = Sha256Hex(data);
  ASSERT_TRUE(store_->Append(sha, 1000, 0, data.substr(0, 600)).ok());
  absl::Status over = store_->Append(sha, 1000, 600, data.substr(600) + "extra");
  EXPECT_EQ(over.code(), absl::StatusCode::kOutOfRange);
  EXPECT_NE(over.message().find("oversized"), std::string::npos);
  EXPECT_EQ(*store_->BytesHeld(sha), 600);
  ASSERT_TRUE(store_->Append(sha, 1000, 600, data.substr(600)).ok());
  EXPECT_TRUE(store_->Finish(sha, 1000).ok());
}

TEST_F(BlobStoreTest, TruncatedUploadIsRefusedAndKeptForResume) {
  std::string data = Pattern(1000, 8);
  std::string sha = Sha256Hex(data);
  ASSERT_TRUE(store_->Append(sha, 1000, 0, data.substr(0, 999)).ok());
  auto early = store_->Finish(sha, 1000);
  EXPECT_EQ(early.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(early.status().message().find("truncated"), std::string::npos);
  EXPECT_FALSE(store_->Contains(sha));
  EXPECT_EQ(*store_->BytesHeld(sha), 999);
  EXPECT_EQ(store_->Finish(Sha256Hex("never sent"), 10).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(BlobStoreTest, ContentNotMatchingDeclaredHashIsDiscarded) {
  std::string declared = Sha256Hex("the real content");
  std::string wrong = "other content!!!";
  ASSERT_TRUE(store_->Append(declared, static_cast<int64_t>(wrong.size()), 0, wrong).ok());
  auto finished = store_->Finish(declared, static_cast<int64_t>(wrong.size()));
  EXPECT_EQ(finished.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_FALSE(store_->Contains(declared));
  EXPECT_EQ(*store_->BytesHeld(declared), 0);
}

TEST_F(BlobStoreTest, AbortDropsPartial) {
  std::string sha = Sha256Hex("abc");
  ASSERT_TRUE(store_->Append(sha, 3, 0, "ab").ok());
  ASSERT_TRUE(store_->Abort(sha).ok());
  EXPECT_EQ(*store_->BytesHeld(sha), 0);
  EXPECT_TRUE(store_->Abort(sha).ok());
}

TEST_F(BlobStoreTest, MalformedHashesAreRejectedBeforeTouchingFiles) {
  for (std::string bad : {std::string("../../etc/passwd"), std::string("ABC"),
                          std::string(64, 'g'), std::string(""),
                          std::string("aa/") + std::string(61, 'a')}) {
    EXPECT_EQ(store_->Stat(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(store_->Append(bad, 1, 0, "x").code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(store_->Finish(bad, 1).status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(store_->OpenReader(bad).status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(store_->Remove(bad).code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST_F(BlobStoreTest, RemoveDeletesBlob) {
  auto put = store_->Put("gc me");
  ASSERT_TRUE(put.ok());
  ASSERT_TRUE(store_->Remove(put->sha256).ok());
  EXPECT_FALSE(store_->Contains(put->sha256));
  EXPECT_TRUE(store_->List()->empty());
}

TEST_F(BlobStoreTest, OpenRemovesDeadTempFilesButKeepsLockedOnes) {
  std::string tmp = JoinPath(dir_.path(), "tmp");
  std::string dead = JoinPath(tmp, "dead-writer");
  std::string live = JoinPath(tmp, "live-writer");
  ASSERT_TRUE(WriteFileAtomic(dead, "half a blob").ok());
  ASSERT_TRUE(WriteFileAtomic(live, "being written").ok());
  UniqueFd live_fd(::open(live.c_str(), O_RDONLY));
  ASSERT_TRUE(live_fd.valid());
  ASSERT_EQ(::flock(live_fd.get(), LOCK_EX), 0);

  auto reopened = BlobStore::Create({dir_.path()});
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_TRUE(std::filesystem::exists(live));
}

TEST(BlobStoreCreate, EmptyRootIsInvalid) {
  EXPECT_EQ(BlobStore::Create({""}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace roboloop::registry
