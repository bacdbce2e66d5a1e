// The streaming loader (issue 28): the streaming sampling contract (coverage of every window
// once per epoch, determinism, resume by Seek, two ranks sharing an epoch without reading an
// episode twice), normalization without loading the dataset, and peak memory under the cap of
// a dataset several times larger than the cache.
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "data/dataset_writer.h"
#include "data/episode_cache.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/test_util.h"
#include "tests/train/encoded_episodes.h"
#include "tests/util/sanitizers.h"
#include "train/loader.h"
#include "train/normalization.h"
#include "train/stream_sampling.h"

namespace roboloop::train {
namespace {

using ::testing::HasSubstr;
using Window = std::pair<int, int>;  // (episode, t)

constexpr int kEpisodes = 24;
constexpr int kLength = 8;        // every episode: 192 windows, no partial batch
constexpr int kStepBytes = 20;    // obs/a 2 + obs/e 1 + actions 2 float32

class StreamLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data::DatasetWriter::Options writer_options;
    writer_options.path = path_;
    auto writer = data::DatasetWriter::Create(writer_options);
    ASSERT_TRUE(writer.ok()) << writer.status();
    for (int e = 0; e < kEpisodes; ++e) {
      ASSERT_TRUE((*writer)->WriteEpisode(testing::EncodedEpisode(e, kLength)).ok());
    }
    ASSERT_TRUE((*writer)->Close().ok());
  }

  // A cache holding `episodes` episodes.
  std::shared_ptr<data::EpisodeCache> OpenCache(int episodes = 6) const {
    data::EpisodeCache::Options options;
    options.episodes.path = path_;
    options.episodes.features = {"obs/a", "obs/e", "actions"};
    options.episodes.as_float32 = true;
    options.capacity_bytes = int64_t{episodes} * kLength * kStepBytes;
    auto cache = data::EpisodeCache::Open(options);
    EXPECT_TRUE(cache.ok()) << cache.status();
    return cache.ok() ? std::shared_ptr<data::EpisodeCache>(std::move(cache).value()) : nullptr;
  }

  static LoaderOptions RawOptions() {
    LoaderOptions options;
    options.obs_features = {"obs/a", "obs/e"};
    options.batch_size = 4;
    options.seed = 5;
    options.normalize = false;
    return options;
  }

  // Blocks of two episodes (16 windows; a third would pass 20).
  static std::unique_ptr<Loader> Stream(std::shared_ptr<data::EpisodeCache> cache,
                                        const LoaderOptions& options) {
    auto loader = Loader::CreateStreaming(std::move(cache), {}, options, /*block_windows=*/20);
    EXPECT_TRUE(loader.ok()) << loader.status();
    return loader.ok() ? std::move(loader).value() : nullptr;
  }

  // The (episode, t) of every sample, from the encoded values of its last obs slot.
  static std::vector<Window> Windows(const std::vector<Batch>& batches) {
    std::vector<Window> windows;
    for (const Batch& batch : batches) {
      for (int i = 0; i < batch.batch_size; ++i) {
        const float* last = &batch.obs[((i + 1) * batch.history - 1) * batch.obs_dim];
        windows.emplace_back(static_cast<int>(last[2]), static_cast<int>(last[0] - 1000.0f * last[2]));
      }
    }
    return windows;
  }

  static std::set<int> EpisodesOf(const std::vector<Window>& windows) {
    std::set<int> episodes;
    for (const Window& w : windows) episodes.insert(w.first);
    return episodes;
  }

  data::testing::TempDir dir_;
  std::string path_ = dir_.File("d.hdf5");
};

TEST(StreamSamplingTest, PlansDealEveryEpisodeToOneRankInBlocks) {
  const std::vector<int64_t> lengths = {5, 12, 3, 1, 9, 7, 7, 2, 30, 4};
  StreamSampling s;
  s.seed = 3;
  s.world_size = 3;
  s.batch_size = 2;
  s.block_windows = 10;
  std::map<int64_t, int> owner;
  for (int rank = 0; rank < 3; ++rank) {
    s.rank = rank;
    const StreamEpoch plan = PlanStreamEpoch(lengths, s, 1);
    for (int64_t episode : plan.episodes) EXPECT_TRUE(owner.emplace(episode, rank).second) << episode;
    // Blocks stay within block_windows unless one episode alone is longer.
    for (size_t b = 0; b + 1 < plan.block_window_begin.size(); ++b) {
      const int64_t windows = plan.block_window_begin[b + 1] - plan.block_window_begin[b];
      const int64_t episodes = plan.block_episode_begin[b + 1] - plan.block_episode_begin[b];
      EXPECT_TRUE(windows <= 10 || episodes == 1) << b;
      std::set<std::pair<int64_t, int64_t>> seen;
      for (const EpisodeStep& step : BlockWindows(plan, lengths, s, 1, static_cast<int64_t>(b))) {
        seen.insert({step.episode, step.t});
      }
      EXPECT_EQ(static_cast<int64_t>(seen.size()), windows);
    }
  }
  EXPECT_EQ(owner.size(), lengths.size());
  s.rank = 0;
  EXPECT_EQ(PlanStreamEpoch(lengths, s, 1).episodes, PlanStreamEpoch(lengths, s, 1).episodes);
  EXPECT_NE(PlanStreamEpoch(lengths, s, 1).episodes, PlanStreamEpoch(lengths, s, 2).episodes);
}

TEST_F(StreamLoaderTest, VisitsEveryWindowOncePerEpochReadingEachEpisodeOnce) {
  auto cache = OpenCache();
  auto loader = Stream(cache, RawOptions());
  ASSERT_NE(loader, nullptr);
  EXPECT_EQ(loader->batches_per_epoch(), 48);
  EXPECT_EQ(loader->block_windows(), 20);
  for (int epoch = 0; epoch < 2; ++epoch) {
    const std::vector<Window> windows = Windows(testing::TakeBatches(*loader, 48));
    EXPECT_EQ(std::set<Window>(windows.begin(), windows.end()).size(), 192u) << "epoch " << epoch;
    // Every episode once per epoch, in a cache of 6: a re-read would show. The workers may
    // already have read the next epoch's first block (2 episodes); epoch 1 may find a few of
    // epoch 0's last episodes still cached.
    const int64_t reads = cache->counters().episodes_read;
    if (epoch == 0) {
      EXPECT_GE(reads, kEpisodes);
    }
    EXPECT_LE(reads, (epoch + 1) * kEpisodes + 2);
  }
  EXPECT_LE(cache->counters().peak_resident_bytes, cache->capacity_bytes());
}

TEST_F(StreamLoaderTest, SameSeedSameSequenceWhateverTheWorkers) {
  LoaderOptions options = RawOptions();
  options.num_workers = 1;
  options.prefetch = 1;
  const std::vector<Window> a = Windows(testing::TakeBatches(*Stream(OpenCache(), options), 60));
  options.num_workers = 3;
  options.prefetch = 5;
  const std::vector<Window> b = Windows(testing::TakeBatches(*Stream(OpenCache(), options), 60));
  EXPECT_EQ(a, b);
  options.seed = 6;
  EXPECT_NE(a, Windows(testing::TakeBatches(*Stream(OpenCache(), options), 60)));
}

TEST_F(StreamLoaderTest, SeekResumesTheSameSequence) {
  const std::vector<Window> whole = Windows(testing::TakeBatches(*Stream(OpenCache(), RawOptions()), 70));
  auto resumed = Stream(OpenCache(), RawOptions());
  resumed->Seek(37);  // inside a block of epoch 0
  const std::vector<Window> tail = Windows(testing::TakeBatches(*resumed, 33));
  EXPECT_EQ(tail, std::vector<Window>(whole.begin() + 37 * 4, whole.end()));
}

TEST_F(StreamLoaderTest, TwoRanksShareAnEpochWithoutReadingAnEpisodeTwice) {
  LoaderOptions options = RawOptions();
  options.world_size = 2;
  std::vector<std::vector<Window>> shares;
  int64_t reads = 0;
  for (int rank = 0; rank < 2; ++rank) {
    options.rank = rank;
    auto cache = OpenCache();
    auto loader = Stream(cache, options);
    EXPECT_EQ(loader->batches_per_epoch(), 24);
    shares.push_back(Windows(testing::TakeBatches(*loader, 24)));
    reads += cache->counters().episodes_read;
  }
  std::set<Window> all(shares[0].begin(), shares[0].end());
  all.insert(shares[1].begin(), shares[1].end());
  EXPECT_EQ(all.size(), 192u);
  EXPECT_EQ(shares[0].size() + shares[1].size(), 192u);
  std::set<int> both;
  for (int episode : EpisodesOf(shares[0])) {
    if (EpisodesOf(shares[1]).count(episode) > 0) both.insert(episode);
  }
  EXPECT_TRUE(both.empty());
  // Each episode read by one rank, once; the workers may have read the next epoch's first
  // block (2 episodes per rank) already.
  EXPECT_GE(reads, kEpisodes);
  EXPECT_LE(reads, kEpisodes + 2 * 2);
}

TEST_F(StreamLoaderTest, BatchesHoldTheWindowsValuesWithPadding) {
  LoaderOptions options = RawOptions();
  options.history = 3;
  options.chunk = 2;
  const std::vector<Batch> batches = testing::TakeBatches(*Stream(OpenCache(), options), 3);
  for (const Batch& batch : batches) {
    const std::vector<Window> windows = Windows({batch});
    for (int i = 0; i < batch.batch_size; ++i) {
      const auto [e, t] = windows[i];
      EXPECT_EQ(batch.history_length[i], std::min(3, t + 1));
      EXPECT_EQ(batch.sample_episode[i], e);
      EXPECT_EQ(batch.sample_step[i], t);
      EXPECT_EQ(batch.obs[(i * 3) * 3], 1000.0f * e + std::max(0, t - 2));
      EXPECT_EQ(batch.actions[(i * 2 + 1) * 2], 1000.0f * e + std::min(kLength - 1, t + 1));
      EXPECT_EQ(batch.action_valid[i * 2 + 1], t + 1 < kLength ? 1 : 0);
    }
  }
}

TEST_F(StreamLoaderTest, NormalizationFromEpisodesEqualsTheStores) {
  data::EpisodeStore::Options store_options;
  store_options.path = path_;
  store_options.features = {"obs/a", "obs/e", "actions"};
  auto store = data::EpisodeStore::Load(store_options);
  ASSERT_TRUE(store.ok()) << store.status();
  auto from_store = NormalizationFromStore(**store, {"obs/a", "obs/e"}, "actions");
  auto cache = OpenCache(2);
  auto streamed = NormalizationFromEpisodes(*cache, {"obs/a", "obs/e"}, "actions");
  ASSERT_TRUE(from_store.ok() && streamed.ok());
  EXPECT_EQ(streamed->obs_mean, from_store->obs_mean);
  EXPECT_EQ(streamed->obs_std, from_store->obs_std);
  EXPECT_EQ(streamed->action_mean, from_store->action_mean);
  EXPECT_EQ(streamed->action_std, from_store->action_std);
  EXPECT_LE(cache->counters().peak_resident_bytes, cache->capacity_bytes());
}

TEST_F(StreamLoaderTest, RejectsABatchLargerThanARanksShare) {
  LoaderOptions options = RawOptions();
  options.batch_size = 38;  // 5 * 38 = 190 of 192 windows, but one rank holds 4 episodes: 32
  options.world_size = 5;
  auto loader = Loader::CreateStreaming(OpenCache(), {}, options, 20);
  ASSERT_FALSE(loader.ok());
  EXPECT_THAT(loader.status().message(), HasSubstr("fewer windows than batch_size 38"));
}

// kB of /proc/self/status field `field` (VmRSS, VmHWM), or -1.
int64_t StatusKiB(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    std::istringstream fields(line);
    std::string key;
    int64_t value = 0;
    if (fields >> key >> value && key == field + ":") return value;
  }
  return -1;
}

// Resets VmHWM to the current RSS (Linux >= 4.0) and returns that RSS in bytes.
int64_t ResetPeakRss() {
  std::ofstream("/proc/self/clear_refs") << "5";
  return StatusKiB("VmRSS") * 1024;
}

TEST(StreamLoaderMemoryTest, StreamsAnEpochOfThreeTimesTheRssCapWithPeakRssUnderIt) {
  if (roboloop::testing::kAddressSanitizer || roboloop::testing::kThreadSanitizer) {
    GTEST_SKIP() << "the sanitizer's allocator keeps freed memory (ASan's quarantine, TSan's caches): the process's "
                    "RSS says nothing about the loader's here (scripts/sanitize.sh)";
  }
  data::testing::TempDir dir;
  const std::string path = dir.File("big.hdf5");
  constexpr int kWide = 256;  // obs/wide float32: 1 KiB a step
  constexpr int kSteps = 200;
  constexpr int kBigEpisodes = 260;  // 260 * 200 steps * (1 KiB + 8 B) ≈ 52 MiB
  {
    data::DatasetWriter::Options writer_options;
    writer_options.path = path;
    writer_options.storage.gzip_level = 0;
    auto writer = data::DatasetWriter::Create(writer_options);
    ASSERT_TRUE(writer.ok()) << writer.status();
    for (int e = 0; e < kBigEpisodes; ++e) {
      std::vector<float> wide(kSteps * kWide), actions(kSteps * 2);
      for (size_t i = 0; i < wide.size(); ++i) wide[i] = static_cast<float>((e * 31 + i) % 97);
      for (size_t i = 0; i < actions.size(); ++i) actions[i] = static_cast<float>(e + i);
      data::Episode episode;
      episode["obs/wide"] = data::Array::From<float>({kSteps, kWide}, wide);
      episode["actions"] = data::Array::From<float>({kSteps, 2}, actions);
      ASSERT_TRUE((*writer)->WriteEpisode(episode).ok());
    }
    ASSERT_TRUE((*writer)->Close().ok());
  }
  constexpr int64_t kCap = int64_t{8} << 20;      // the data cache
  constexpr int64_t kRssCap = int64_t{16} << 20;  // the cache and the rest of the streaming
  const int64_t rss_before = ResetPeakRss();
  {
    data::EpisodeCache::Options cache_options;
    cache_options.episodes.path = path;
    cache_options.episodes.features = {"obs/wide", "actions"};
    cache_options.episodes.as_float32 = true;
    cache_options.capacity_bytes = kCap;
    auto cache = data::EpisodeCache::Open(cache_options);
    ASSERT_TRUE(cache.ok()) << cache.status();
    std::shared_ptr<data::EpisodeCache> shared(std::move(cache).value());
    ASSERT_GE(shared->total_bytes(), 3 * kRssCap);
    LoaderOptions options;
    options.obs_features = {"obs/wide"};
    options.batch_size = 64;
    options.normalize = false;
    auto loader = Loader::CreateStreaming(shared, {}, options);
    ASSERT_TRUE(loader.ok()) << loader.status();
    const int64_t batches = (*loader)->batches_per_epoch();
    for (int64_t k = 0; k < batches; ++k) ASSERT_TRUE((*loader)->Next().ok());
    // Each episode once; the workers may have started on the next epoch's first block.
    EXPECT_GE(shared->counters().episodes_read, kBigEpisodes);
    EXPECT_LE(shared->counters().episodes_read,
              kBigEpisodes + (*loader)->block_windows() / kSteps + 1);
  }
  const int64_t streamed_growth = StatusKiB("VmHWM") * 1024 - rss_before;
  // Beyond the cache: HDF5's metadata cache, batches in flight, block indices, worker stacks.
  EXPECT_LT(streamed_growth, kRssCap) << "peak RSS grew by " << streamed_growth;
  // The measurement sees a load: the in-memory store grows the peak by the dataset's size.
  const int64_t rss_in_memory = ResetPeakRss();
  data::EpisodeStore::Options store_options;
  store_options.path = path;
  auto store = data::EpisodeStore::Load(store_options);
  ASSERT_TRUE(store.ok()) << store.status();
  const int64_t in_memory_growth = StatusKiB("VmHWM") * 1024 - rss_in_memory;
  EXPECT_GT(in_memory_growth, (*store)->memory_bytes() * 9 / 10);
  RecordProperty("streamed_peak_rss_growth_bytes", std::to_string(streamed_growth));
  RecordProperty("in_memory_peak_rss_growth_bytes", std::to_string(in_memory_growth));
  std::cout << "dataset " << (*store)->memory_bytes() << " bytes, cache cap " << kCap
            << ": peak RSS growth streamed " << streamed_growth << ", in memory "
            << in_memory_growth << "\n";
}

}  // namespace
}  // namespace roboloop::train
