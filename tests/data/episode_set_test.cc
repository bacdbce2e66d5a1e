// Many files as one dataset (issue 28, req 4): an EpisodeStore and an EpisodeCache over a set
// hold the episodes of the merged file, in the same order; files that disagree are named.
#include <cstring>

#include "data/dataset_writer.h"
#include "data/episode_cache.h"
#include "data/episode_store.h"
#include "data/tools.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/test_util.h"

namespace roboloop::data {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::MakeEpisode;
using testing::TempDir;
using testing::WriteDataset;

const std::vector<std::string> kFeatures = {"actions", "obs/qpos", "obs/qvel"};

// Two files, a (3 demos) and b (2 demos), and their merge.
struct SetFiles {
  std::string a, b, merged;
};

SetFiles WriteSet(const TempDir& dir) {
  SetFiles files{dir.File("a.hdf5"), dir.File("b.hdf5"), dir.File("merged.hdf5")};
  WriteDataset(files.a, {5, 9, 3});
  WriteDataset(files.b, {7, 4});
  MergeOptions merge;
  merge.inputs = {files.a, files.b};
  merge.output = files.merged;
  EXPECT_TRUE(MergeDatasets(merge).ok());
  return files;
}

EpisodeStore::Options StoreOptions(const std::string& path, std::vector<std::string> more_paths = {}) {
  EpisodeStore::Options options;
  options.path = path;
  options.more_paths = std::move(more_paths);
  options.features = kFeatures;
  options.as_float32 = true;
  return options;
}

// Every feature's rows of `episode` of `store`.
std::vector<uint8_t> EpisodeBytes(const EpisodeStore& store, int64_t episode) {
  std::vector<uint8_t> bytes;
  for (const std::string& name : kFeatures) {
    const EpisodeStore::Feature* feature = *store.feature(name);
    const uint8_t* begin = feature->bytes.data() + store.episode_offset(episode) * feature->row_bytes;
    bytes.insert(bytes.end(), begin, begin + store.episode_length(episode) * feature->row_bytes);
  }
  return bytes;
}

TEST(EpisodeSetTest, StoreOverTwoFilesHoldsTheMergedFilesEpisodesInOrder) {
  TempDir dir;
  const SetFiles files = WriteSet(dir);
  auto set = EpisodeStore::Load(StoreOptions(files.a, {files.b}));
  ASSERT_TRUE(set.ok()) << set.status();
  auto merged = EpisodeStore::Load(StoreOptions(files.merged));
  ASSERT_TRUE(merged.ok()) << merged.status();
  ASSERT_EQ((*set)->num_episodes(), 5);
  ASSERT_EQ((*merged)->num_episodes(), 5);
  EXPECT_EQ((*set)->total_steps(), 28);
  for (const std::string& name : kFeatures) {
    EXPECT_EQ((*(*set)->feature(name))->bytes, (*(*merged)->feature(name))->bytes) << name;
  }
  EXPECT_EQ((*set)->episode_path(2), files.a);
  EXPECT_EQ((*set)->episode_path(3), files.b);
  EXPECT_EQ((*set)->demo_name(3), "demo_0");
  EXPECT_EQ((*set)->path(), files.a);
}

TEST(EpisodeSetTest, CacheOverTwoFilesReadsTheStoresEpisodes) {
  TempDir dir;
  const SetFiles files = WriteSet(dir);
  auto store = EpisodeStore::Load(StoreOptions(files.merged));
  ASSERT_TRUE(store.ok()) << store.status();
  EpisodeCache::Options options;
  options.episodes = StoreOptions(files.a, {files.b});
  options.capacity_bytes = 1 << 20;
  auto cache = EpisodeCache::Open(options);
  ASSERT_TRUE(cache.ok()) << cache.status();
  ASSERT_EQ((*cache)->num_episodes(), 5);
  EXPECT_EQ((*cache)->total_steps(), 28);
  EXPECT_EQ((*cache)->episode_path(4), files.b);
  for (int64_t e = 0; e < 5; ++e) {
    EXPECT_EQ((*cache)->episode_length(e), (*store)->episode_length(e));
    auto episode = (*cache)->Get(e);
    ASSERT_TRUE(episode.ok()) << episode.status();
    EXPECT_EQ(EpisodeBytes(**episode, 0), EpisodeBytes(**store, e)) << "episode " << e;
  }
}

TEST(EpisodeSetTest, AFileWhoseFeaturesDifferIsNamedWithTheDifference) {
  TempDir dir;
  const SetFiles files = WriteSet(dir);
  const std::string wide = dir.File("wide.hdf5");
  DatasetWriter::Options writer_options;
  writer_options.path = wide;
  auto writer = DatasetWriter::Create(writer_options);
  ASSERT_TRUE(writer.ok()) << writer.status();
  Episode episode = MakeEpisode(4, 0);
  episode["obs/qpos"] = Array::From<float>({4, 2}, std::vector<float>(8, 0.5f));
  ASSERT_TRUE((*writer)->WriteEpisode(episode).ok());
  ASSERT_TRUE((*writer)->Close().ok());
  const auto expected = AllOf(HasSubstr(wide), HasSubstr("obs/qpos is float32 [T, 2]"),
                              HasSubstr("expected float32 [T, 3]"), HasSubstr(files.a));
  EXPECT_THAT(EpisodeStore::Load(StoreOptions(files.a, {files.b, wide})).status().message(), expected);
  EpisodeCache::Options options;
  options.episodes = StoreOptions(files.a, {wide});
  EXPECT_THAT(EpisodeCache::Open(options).status().message(), expected);
}

}  // namespace
}  // namespace roboloop::data
