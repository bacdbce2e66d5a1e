// EpisodeCache under concurrent readers (issue 28, req 3): a miss reads without the cache's lock,
// yet an episode asked for by many threads at once is read once, every thread gets it, and the
// episodes held and being read stay within the capacity.
#include <filesystem>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "data/episode_cache.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/test_util.h"

namespace roboloop::data {
namespace {

constexpr int kThreads = 8;

std::unique_ptr<EpisodeCache> OpenCache(const std::string& path, int64_t capacity_bytes) {
  EpisodeCache::Options options;
  options.episodes.path = path;
  options.capacity_bytes = capacity_bytes;
  auto cache = EpisodeCache::Open(options);
  EXPECT_TRUE(cache.ok()) << cache.status();
  return cache.ok() ? std::move(*cache) : nullptr;
}

TEST(EpisodeCacheTest, ThreadsAskingForOneEpisodeAtOnceReadItOnce) {
  testing::TempDir dir;
  testing::WriteDataset(dir.File("d.hdf5"), {40, 30}, "{}", testing::MakeImageEpisode);
  auto cache = OpenCache(dir.File("d.hdf5"), 64 << 20);
  ASSERT_NE(cache, nullptr);
  std::vector<std::shared_ptr<const EpisodeStore>> got(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      auto episode = cache->Get(1);
      if (episode.ok()) got[i] = *episode;
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int i = 0; i < kThreads; ++i) {
    ASSERT_NE(got[i], nullptr) << "thread " << i;
    EXPECT_EQ(got[i], got[0]) << "thread " << i << " holds another copy";
  }
  EXPECT_EQ(cache->counters().episodes_read, 1);
}

// QA: a file truncated while training streamed from it failed with HDF5's "inflate() failed" alone.
TEST(EpisodeCacheTest, AFileThatShrankWhileOpenIsSaidToHaveChanged) {
  testing::TempDir dir;
  const std::string path = dir.File("d.hdf5");
  testing::WriteDataset(path, {40, 30, 50}, "{}", testing::MakeImageEpisode);
  auto cache = OpenCache(path, 64 << 20);
  ASSERT_NE(cache, nullptr);
  const auto bytes = static_cast<int64_t>(std::filesystem::file_size(path));
  std::filesystem::resize_file(path, bytes / 3);
  const auto episode = cache->Get(2);
  ASSERT_FALSE(episode.ok());
  EXPECT_THAT(std::string(episode.status().message()),
              ::testing::HasSubstr(absl::StrCat(" (", path, " was ", bytes, " bytes when training opened it and is ",
                                                bytes / 3, " now: it changed while being read)")));
}

// Every episode is as large as a third of the cache: threads reading different episodes at
// once must wait for room, never holding more than the capacity together.
TEST(EpisodeCacheTest, ConcurrentMissesStayWithinTheCapacity) {
  testing::TempDir dir;
  const std::vector<int> lengths(12, 20);
  testing::WriteDataset(dir.File("d.hdf5"), lengths, "{}", testing::MakeImageEpisode);
  auto probe = OpenCache(dir.File("d.hdf5"), 64 << 20);
  ASSERT_NE(probe, nullptr);
  const int64_t episode_bytes = 20 * probe->step_bytes();
  auto cache = OpenCache(dir.File("d.hdf5"), 3 * episode_bytes);
  ASSERT_NE(cache, nullptr);
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int round = 0; round < 3; ++round) {
        for (int e = 0; e < 12; ++e) failures[i] += cache->Get((e + i + round) % 12).ok() ? 0 : 1;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int i = 0; i < kThreads; ++i) EXPECT_EQ(failures[i], 0) << "thread " << i;
  EXPECT_LE(cache->counters().peak_resident_bytes, 3 * episode_bytes);
  EXPECT_GE(cache->counters().episodes_read, 12);
}

}  // namespace
}  // namespace roboloop::data
