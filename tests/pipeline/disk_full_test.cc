// Fault injection, a file system that fills up (issue 25, requirement 3): the registry's blob
// store and catalog, the pipeline run store and dataset writes run on a small tmpfs the test
// mounts (tests/util/small_mount.h). Each write that meets the full disk must fail with a
// ResourceExhausted "No space left on device" error naming the file, leave nothing partial
// under a final name, and the store must reopen and check clean once space is freed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/fs.h"
#include "common/sha256.h"
#include "data/dataset_writer.h"
#include "data/validation.h"
#include "pipeline/run_store.h"
#include "registry/registry.h"
#include "tests/data/test_util.h"
#include "tests/registry/test_util.h"
#include "tests/util/small_mount.h"
#include "tests/util/subprocess.h"

namespace roboloop {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMountBytes = 1 << 20;
// Enough attempts for any store to need a new block of a full disk.
constexpr int kMaxAttempts = 2000;

// The message every disk-full error carries (strerror(ENOSPC) or SQLite's own words).
constexpr char kNoSpace[] = "o space left on device";

std::string Bytes(size_t size, char seed) {
  std::string data(size, '\0');
  for (size_t i = 0; i < size; ++i) data[i] = static_cast<char>(seed + i * 31 + (i >> 9));
  return data;
}

std::unique_ptr<registry::Registry> OpenRegistry(const std::string& root) {
  registry::Registry::Options options;
  options.root = root;
  auto opened = registry::Registry::Create(options);
  EXPECT_TRUE(opened.ok()) << opened.status();
  return opened.ok() ? *std::move(opened) : nullptr;
}

void ExpectVerifiesClean(registry::Registry& registry) {
  auto verified = registry.Verify(v1::VerifyRequest());
  ASSERT_TRUE(verified.ok()) << verified.status();
  EXPECT_THAT(verified->problems(), ::testing::IsEmpty());
}

TEST(DiskFullTest, BlobPutFailsCleanlyAndTheStoreVerifies) {
  ROBOLOOP_ON_SMALL_MOUNT(mount, kMountBytes);
  const std::string root = mount + "/registry";
  auto registry = OpenRegistry(root);
  ASSERT_NE(registry, nullptr);
  const std::string small = Bytes(10000, 'a');
  ASSERT_TRUE(registry->PutBlob(small).ok());

  const std::string big = Bytes(2 * kMountBytes, 'b');
  auto put = registry->PutBlob(big);
  ASSERT_FALSE(put.ok());
  EXPECT_EQ(put.status().code(), absl::StatusCode::kResourceExhausted) << put.status();
  EXPECT_THAT(put.status().message(), HasSubstr(kNoSpace));
  EXPECT_THAT(put.status().message(), HasSubstr(root + "/tmp/"));
  EXPECT_FALSE(registry->blobs().Contains(Sha256Hex(big)));
  EXPECT_THAT(*ListDir(root + "/tmp"), ::testing::IsEmpty()) << "temp file left behind";

  registry = OpenRegistry(root);
  ASSERT_NE(registry, nullptr);
  EXPECT_EQ(*registry->ReadBlob(Sha256Hex(small)), small);
  ExpectVerifiesClean(*registry);
}

TEST(DiskFullTest, ResumableUploadKeepsWhatFitAndFinishesOnceSpaceIsFree) {
  ROBOLOOP_ON_SMALL_MOUNT(mount, kMountBytes);
  const std::string root = mount + "/registry";
  auto registry = OpenRegistry(root);
  ASSERT_NE(registry, nullptr);
  const std::string filler = testing::FillDisk(mount);
  ASSERT_FALSE(filler.empty());

  const std::string data = Bytes(256 << 10, 'u');
  const std::string sha = Sha256Hex(data);
  const int64_t size = static_cast<int64_t>(data.size());
  absl::Status appended = registry->AppendUpload(sha, size, 0, data);
  EXPECT_EQ(appended.code(), absl::StatusCode::kResourceExhausted) << appended;
  EXPECT_THAT(appended.message(), HasSubstr(kNoSpace));
  EXPECT_THAT(appended.message(), HasSubstr(registry->blobs().PartialPath(sha)));
  EXPECT_FALSE(registry->blobs().Contains(sha));
  EXPECT_FALSE(registry->FinishUpload(sha, size).ok()) << "a short upload must not publish";

  ASSERT_TRUE(RemoveFile(filler).ok());
  registry = OpenRegistry(root);
  ASSERT_NE(registry, nullptr);
  v1::UploadStatusRequest status_request;
  status_request.set_sha256(sha);
  const int64_t held = registry->UploadStatus(status_request)->bytes_held();
  ASSERT_TRUE(registry->AppendUpload(sha, size, held, absl::string_view(data).substr(held)).ok());
  ASSERT_TRUE(registry->FinishUpload(sha, size).ok());
  EXPECT_EQ(*registry->ReadBlob(sha), data);
  ExpectVerifiesClean(*registry);
}

TEST(DiskFullTest, CatalogRegistrationsFailCleanlyAndAcknowledgedOnesSurvive) {
  ROBOLOOP_ON_SMALL_MOUNT(mount, kMountBytes);
  const std::string root = mount + "/registry";
  auto registry = OpenRegistry(root);
  ASSERT_NE(registry, nullptr);
  const std::string weights = Bytes(1000, 'w');
  ASSERT_TRUE(registry->PutBlob(weights).ok());
  const std::string filler = testing::FillDisk(mount);
  ASSERT_FALSE(filler.empty());

  // Registrations go on until the catalog needs space it cannot get.
  int acknowledged = 0;
  absl::Status failure;
  for (int step = 1; step <= kMaxAttempts && failure.ok(); ++step) {
    v1::RegisterCheckpointRequest request;
    request.set_model("full");
    request.set_manifest_json(
        registry::testing_util::MakeManifest("full", {{"policy", weights}}, step).dump());
    auto registered = registry->RegisterCheckpoint(request);
    if (registered.ok()) ++acknowledged;
    failure = registered.status();
  }
  ASSERT_FALSE(failure.ok()) << kMaxAttempts << " registrations fit on a full disk";
  EXPECT_EQ(failure.code(), absl::StatusCode::kResourceExhausted) << failure;
  EXPECT_THAT(failure.message(), HasSubstr("no space left on device"));
  EXPECT_THAT(failure.message(), HasSubstr(root + "/catalog.db"));

  registry.reset();
  ASSERT_TRUE(RemoveFile(filler).ok());
  registry = OpenRegistry(root);
  ASSERT_NE(registry, nullptr);
  v1::ListCheckpointsRequest list;
  list.set_model("full");
  list.set_limit(registry::kMaxListLimit);
  EXPECT_EQ(registry->ListCheckpoints(list)->checkpoints_size(), acknowledged);
  ExpectVerifiesClean(*registry);
}

TEST(DiskFullTest, RunStoreFailsCleanlyAndReopens) {
  ROBOLOOP_ON_SMALL_MOUNT(mount, kMountBytes);
  const std::string path = mount + "/runs.db";
  auto store = pipeline::RunStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  const std::string filler = testing::FillDisk(mount);
  ASSERT_FALSE(filler.empty());

  std::vector<std::string> acknowledged;
  absl::Status failure;
  for (int i = 0; i < kMaxAttempts && failure.ok(); ++i) {
    auto run = (*store)->CreateRun("pipeline-" + std::to_string(i), "spec.yaml", {"a=b"});
    if (run.ok()) acknowledged.push_back(*run);
    failure = run.status();
  }
  ASSERT_FALSE(failure.ok()) << kMaxAttempts << " runs fit on a full disk";
  EXPECT_EQ(failure.code(), absl::StatusCode::kResourceExhausted) << failure;
  EXPECT_THAT(failure.message(), HasSubstr("no space left on device"));
  EXPECT_THAT(failure.message(), HasSubstr(path));

  store->reset();
  ASSERT_TRUE(RemoveFile(filler).ok());
  store = pipeline::RunStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto runs = (*store)->ListRuns(kMaxAttempts);
  ASSERT_TRUE(runs.ok()) << runs.status();
  EXPECT_EQ(runs->size(), acknowledged.size());
  for (const std::string& id : acknowledged) EXPECT_TRUE((*store)->GetRun(id).ok()) << id;
  EXPECT_TRUE((*store)->CreateRun("after", "spec.yaml").ok());
}

TEST(DiskFullTest, DatasetWriteFailsWithoutAFileUnderItsName) {
  ROBOLOOP_ON_SMALL_MOUNT(mount, kMountBytes);
  const std::string path = mount + "/demos.hdf5";
  data::DatasetWriter::Options options;
  options.path = path;
  absl::Status failure;
  {
    auto writer = data::DatasetWriter::Create(options);
    ASSERT_TRUE(writer.ok()) << writer.status();
    // Episodes of ~40 KiB each: the 1 MiB mount is full long before the attempts run out.
    for (int i = 0; i < 100 && failure.ok(); ++i) {
      failure = (*writer)->WriteEpisode(data::testing::MakeEpisode(400, i)).status();
    }
    if (failure.ok()) failure = (*writer)->Close();
  }
  ASSERT_FALSE(failure.ok()) << "100 episodes fit in " << kMountBytes << " bytes";
  EXPECT_EQ(failure.code(), absl::StatusCode::kResourceExhausted) << failure;
  EXPECT_THAT(failure.message(), HasSubstr(kNoSpace));
  EXPECT_THAT(failure.message(), HasSubstr(path + ".partial"));
  EXPECT_THAT(*ListDir(mount), ::testing::IsEmpty()) << "a dataset file was left behind";

  // With the space back, the same dataset is written whole and validates.
  data::testing::WriteDataset(path, {50, 60});
  auto validated = data::ValidateFile(path, data::ValidationOptions());
  EXPECT_TRUE(validated.ok()) << validated.status();
}

TEST(DiskFullTest, DataMergeCommandExitsWithAnErrorAndLeavesNoFile) {
  ROBOLOOP_ON_SMALL_MOUNT(mount, kMountBytes);
  const std::string sources = testing::MakeTempDir("disk-full-merge");
  data::testing::WriteDataset(sources + "/a.hdf5", {400, 400});
  data::testing::WriteDataset(sources + "/b.hdf5", {400, 400});
  const std::string merged = mount + "/merged.hdf5";
  const std::string filler = testing::FillDisk(mount);
  ASSERT_FALSE(filler.empty());

  testing::ProgramResult merge = testing::RunProgram({testing::RoboloopBinary(), "data", "merge",
                                                      sources + "/a.hdf5", sources + "/b.hdf5", "-o",
                                                      merged});
  EXPECT_EQ(merge.exit_code, 1) << "an error, not a crash: " << merge.err;
  EXPECT_THAT(merge.err, HasSubstr(kNoSpace));
  EXPECT_THAT(merge.err, HasSubstr(merged));
  EXPECT_THAT(*ListDir(mount), ::testing::ElementsAre("filler")) << "a dataset file was left behind";
}

TEST(DiskFullTest, RegistryPutCommandExitsNonZeroAndVerifyIsClean) {
  ROBOLOOP_ON_SMALL_MOUNT(mount, kMountBytes);
  const std::string root = mount + "/store";
  const std::string source = testing::MakeTempDir("disk-full-cli") + "/big.bin";
  ASSERT_TRUE(WriteFileAtomic(source, Bytes(2 * kMountBytes, 'c')).ok());
  auto roboloop = [&](std::vector<std::string> args) {
    args.insert(args.end(), {"--root", root});
    return testing::RunRoboloop(args);
  };

  testing::ProgramResult put = roboloop({"registry", "put", source, "--dataset", "big"});
  EXPECT_NE(put.exit_code, 0);
  EXPECT_THAT(put.err, HasSubstr(kNoSpace));
  EXPECT_THAT(put.err, HasSubstr(root));

  testing::ProgramResult listed = roboloop({"registry", "ls", "--datasets", "--format", "json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_THAT(listed.out, ::testing::Not(HasSubstr("\"big\"")));
  testing::ProgramResult verify = roboloop({"registry", "verify"});
  EXPECT_EQ(verify.exit_code, 0) << verify.err;
  EXPECT_THAT(verify.out, HasSubstr("0 problems"));
}

}  // namespace
}  // namespace roboloop
