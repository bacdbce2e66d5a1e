// A pipeline's train stage sends local dataset files as registry ids (train/dataset_set.h
// RegisterLocalDatasets): a file becomes its registered id, a folder of files its registered set;
// references, LeRobot folders and paths that name nothing here stay as they are. And the rule
// both sides share (DatasetEntryIsPath): a bare name is a registry reference, never a file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "common/sha256.h"
#include "tests/data/test_util.h"
#include "tests/util/served_registry.h"
#include "tests/util/subprocess.h"
#include "train/dataset_set.h"

namespace roboloop::train {
namespace {

class RegisterLocalDatasetsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("register_local");
    auto served = testing::ServeRegistry(dir_ + "/registry", "unix:" + dir_ + "/registry.sock");
    ASSERT_TRUE(served.ok()) << served.status();
    host_ = std::move(served->host);
    client_ = std::move(served->client);
  }

  std::string dir_;
  std::unique_ptr<registry::RegistryHost> host_;
  std::unique_ptr<registry::RegistryClient> client_;
};

TEST(ResolvedDatasetSetTest, DescribeNamesTheFirstFileAndCountsTheOthers) {
  ResolvedDatasetSet set;
  set.members.push_back({"a.hdf5", "", ""});
  EXPECT_EQ(set.Describe(), "a.hdf5");
  set.members.push_back({"b.hdf5", "", ""});
  EXPECT_EQ(set.Describe(), "a.hdf5 (and 1 more file of its set)");
  set.members.push_back({"c.hdf5", "", ""});
  EXPECT_EQ(set.Describe(), "a.hdf5 (and 2 more files of its set)");
}

TEST_F(RegisterLocalDatasetsTest, LocalFilesBecomeRegisteredIdsAndEverythingElseStays) {
  std::filesystem::create_directories(dir_ + "/parts");
  std::filesystem::create_directories(dir_ + "/lerobot/meta");
  std::ofstream(dir_ + "/lerobot/meta/info.json") << "{}";
  data::testing::WriteDataset(dir_ + "/demos.hdf5", {3, 4});
  data::testing::WriteDataset(dir_ + "/parts/a.hdf5", {2});
  data::testing::WriteDataset(dir_ + "/parts/b.hdf5", {5});

  v1::TrainConfig config;
  config.set_dataset(dir_ + "/demos.hdf5");
  for (const std::string& entry : {dir_ + "/parts", std::string("demos@latest"), dir_ + "/absent/*.hdf5",
                                   dir_ + "/lerobot", std::string("remote/only.hdf5")}) {
    config.add_datasets(entry);
  }
  const absl::Status registered = RegisterLocalDatasets(*client_, dir_ + "/cache", &config);
  ASSERT_TRUE(registered.ok()) << registered;

  EXPECT_EQ(config.dataset(), *Sha256File(dir_ + "/demos.hdf5"));
  const absl::StatusOr<v1::Dataset> file = client_->GetDataset(config.dataset());
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->name(), "demos");
  const absl::StatusOr<v1::Dataset> set = client_->GetDataset(config.datasets(0));
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_TRUE(IsDatasetSet(*set));
  EXPECT_EQ(set->parent_ids_size(), 2);
  EXPECT_EQ(config.datasets(1), "demos@latest");
  EXPECT_EQ(config.datasets(2), dir_ + "/absent/*.hdf5");
  EXPECT_EQ(config.datasets(3), dir_ + "/lerobot");
  EXPECT_EQ(config.datasets(4), "remote/only.hdf5");

  // The ids resolve from the registry alone, as a train service elsewhere would resolve them.
  const absl::StatusOr<ResolvedDatasetSet> resolved = ResolveDatasetSet(
      *client_, {config.dataset(), config.datasets(0)}, dir_ + "/elsewhere", /*register_files=*/false);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->members.size(), 3u);
}

// A served train worker resolves what a caller sent; a bare name must not read a file or a
// folder that happens to have that name where the worker runs.
TEST_F(RegisterLocalDatasetsTest, ABareNameIsAReferenceEvenWhereAFileOrFolderHasThatName) {
  std::filesystem::create_directories(dir_ + "/parts");
  data::testing::WriteDataset(dir_ + "/demos", {3});
  data::testing::WriteDataset(dir_ + "/parts/a.hdf5", {2});
  const std::filesystem::path here = std::filesystem::current_path();
  std::filesystem::current_path(dir_);
  const absl::StatusOr<ResolvedDatasetSet> file = ResolveDatasetSet(*client_, {"demos"}, "cache", false);
  const absl::StatusOr<ResolvedDatasetSet> folder = ResolveDatasetSet(*client_, {"parts"}, "cache", false);
  const absl::StatusOr<ResolvedDatasetSet> path = ResolveDatasetSet(*client_, {"./demos"}, "cache", false);
  std::filesystem::current_path(here);
  ASSERT_FALSE(file.ok());
  EXPECT_THAT(file.status().message(),
              ::testing::HasSubstr("dataset demos (a registry reference: a file or folder is named with a path, "
                                   "e.g. ./demos)"));
  ASSERT_FALSE(folder.ok());
  EXPECT_THAT(folder.status().message(), ::testing::HasSubstr("dataset parts (a registry reference"));
  ASSERT_TRUE(path.ok()) << path.status();
  ASSERT_EQ(path->members.size(), 1u);
  EXPECT_EQ(path->members.front().id, *Sha256File(dir_ + "/demos"));
}

}  // namespace
}  // namespace roboloop::train
