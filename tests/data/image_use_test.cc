// Image keys (issue 23) in what reads datasets: EpisodeStore and EpisodeCache keep frames as
// uint8 and count their bytes, statistics are per RGB channel, merge/split/info keep and show them.
#include <algorithm>
#include <cmath>

#include "data/episode_cache.h"
#include "data/episode_store.h"
#include "data/stats.h"
#include "data/tools.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/test_util.h"

namespace roboloop::data {
namespace {

using ::testing::HasSubstr;
using testing::kImageKey;
using testing::MakeImageEpisode;
using testing::OpenOrDie;
using testing::TempDir;
using testing::WriteDataset;

constexpr int64_t kFrameBytes = 8 * 8 * 3;

std::vector<Episode> WriteImageDataset(const std::string& path, const std::vector<int>& lengths) {
  return WriteDataset(path, lengths, R"({"env_name": "Lift"})", MakeImageEpisode);
}

TEST(ImageEpisodeStoreTest, AsFloat32KeepsFramesAsBytes) {
  TempDir dir;
  const std::string path = dir.File("images.hdf5");
  const std::vector<Episode> episodes = WriteImageDataset(path, {5, 7});
  EpisodeStore::Options options;
  options.path = path;
  options.features = {"actions", "obs/qvel", kImageKey};
  options.as_float32 = true;
  auto store = EpisodeStore::Load(options);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_EQ((*store)->conversions().size(), 1u);
  EXPECT_EQ((*store)->conversions()[0].feature, "obs/qvel");
  auto image = (*store)->feature(kImageKey);
  ASSERT_TRUE(image.ok());
  EXPECT_EQ((*image)->spec.dtype, DType::kUint8);
  EXPECT_EQ((*image)->row_bytes, kFrameBytes);
  const absl::Span<const uint8_t> frame = (*image)->Step<uint8_t>((*store)->episode_offset(1) + 4);
  const std::vector<uint8_t>& stored = episodes[1].at(kImageKey).bytes;
  EXPECT_EQ(std::vector<uint8_t>(frame.begin(), frame.end()),
            std::vector<uint8_t>(stored.begin() + 4 * kFrameBytes, stored.begin() + 5 * kFrameBytes));
  EXPECT_EQ((*store)->memory_bytes(), 12 * (4 * 4 + 2 * 4 + kFrameBytes));
}

TEST(ImageEpisodeCacheTest, CountsFramesAsBytes) {
  TempDir dir;
  const std::string path = dir.File("images.hdf5");
  WriteImageDataset(path, {5, 7});
  EpisodeCache::Options options;
  options.episodes.path = path;
  options.episodes.features = {"actions", kImageKey};
  options.episodes.as_float32 = true;
  options.capacity_bytes = 7 * (4 * 4 + kFrameBytes);  // exactly the longer episode
  auto cache = EpisodeCache::Open(options);
  ASSERT_TRUE(cache.ok()) << cache.status();
  EXPECT_EQ((*cache)->step_bytes(), 4 * 4 + kFrameBytes);
  ASSERT_TRUE((*cache)->Get(1).ok());
  EXPECT_EQ((*cache)->counters().resident_bytes, 7 * (4 * 4 + kFrameBytes));
  ASSERT_TRUE((*cache)->Get(0).ok());  // evicts episode 1
  EXPECT_EQ((*cache)->counters().resident_bytes, 5 * (4 * 4 + kFrameBytes));
}

TEST(ImageStatsTest, HistogramQuantileMatchesQuantileOfTheValues) {
  std::array<int64_t, 256> histogram{};
  std::vector<double> values;
  for (int i = 0; i < 1000; ++i) {
    const int value = (i * i * 31 + 7 * i) % 256;
    ++histogram[value];
    values.push_back(value);
  }
  std::sort(values.begin(), values.end());
  for (double q : {0.0, 0.01, 0.37, 0.5, 0.99, 1.0}) {
    EXPECT_DOUBLE_EQ(HistogramQuantile(histogram, q), Quantile(values, q)) << q;
  }
}

TEST(ImageStatsTest, PerChannelStatisticsOfPixelsOverOne) {
  TempDir dir;
  const std::string path = dir.File("images.hdf5");
  const std::vector<Episode> episodes = WriteImageDataset(path, {5, 7});
  auto stats = ComputeFileStats(path, StatsOptions());
  ASSERT_TRUE(stats.ok()) << stats.status();
  auto image = std::find_if(stats->begin(), stats->end(), [](const FeatureStats& s) { return s.name == kImageKey; });
  ASSERT_NE(image, stats->end());
  EXPECT_TRUE(image->per_channel);
  EXPECT_EQ(image->count, 12);
  ASSERT_EQ(image->mean.size(), 3u);
  for (int channel = 0; channel < 3; ++channel) {
    std::vector<double> values;
    for (const Episode& episode : episodes) {
      const std::vector<uint8_t>& bytes = episode.at(kImageKey).bytes;
      for (size_t i = channel; i < bytes.size(); i += 3) values.push_back(bytes[i] / 255.0);
    }
    std::sort(values.begin(), values.end());
    double sum = 0;
    for (double value : values) sum += value;
    const double mean = sum / values.size();
    double squares = 0;
    for (double value : values) squares += (value - mean) * (value - mean);
    EXPECT_NEAR(image->mean[channel], mean, 1e-12);
    EXPECT_NEAR(image->std[channel], std::sqrt(squares / values.size()), 1e-12);
    EXPECT_DOUBLE_EQ(image->min[channel], values.front());
    EXPECT_DOUBLE_EQ(image->max[channel], values.back());
    EXPECT_NEAR(image->q01[channel], Quantile(values, 0.01), 1e-12);
    EXPECT_NEAR(image->q99[channel], Quantile(values, 0.99), 1e-12);
  }
  EXPECT_EQ(StatsToJson(*stats)[kImageKey]["per_channel"], true);
  EXPECT_FALSE(StatsToJson(*stats)["obs/qpos"].contains("per_channel"));

  ASSERT_TRUE(StoreStats(path, *stats).ok());
  auto loaded = LoadStats(path);
  ASSERT_TRUE(loaded.ok() && loaded->has_value());
  auto stored = std::find_if((*loaded)->begin(), (*loaded)->end(),
                             [](const FeatureStats& s) { return s.name == kImageKey; });
  ASSERT_NE(stored, (*loaded)->end());
  EXPECT_TRUE(stored->per_channel);
  EXPECT_EQ(stored->mean, image->mean);
}

TEST(ImageToolsTest, MergeAndSplitKeepFramesInfoShowsThem) {
  TempDir dir;
  const std::vector<Episode> a = WriteImageDataset(dir.File("a.hdf5"), {4});
  const std::vector<Episode> b = WriteImageDataset(dir.File("b.hdf5"), {3, 5});
  MergeOptions merge;
  merge.inputs = {dir.File("a.hdf5"), dir.File("b.hdf5")};
  merge.output = dir.File("m.hdf5");
  ASSERT_TRUE(MergeDatasets(merge).ok());
  {
    const auto merged = OpenOrDie(merge.output);
    EXPECT_EQ(merged->ReadFeature("demo_0", kImageKey)->bytes, a[0].at(kImageKey).bytes);
    EXPECT_EQ(merged->ReadFeature("demo_2", kImageKey)->bytes, b[1].at(kImageKey).bytes);
  }  // split opens the file read-write
  auto split = SplitDataset(merge.output, 0.34, 7);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->valid.size(), 1u);

  auto info = GetInfo(merge.output);
  ASSERT_TRUE(info.ok()) << info.status();
  const std::string table = InfoToTable(*info);
  EXPECT_THAT(table, HasSubstr("  obs/agentview_image  uint8 [T, 8, 8, 3]  image (RGB frames)\n"));
  EXPECT_THAT(table, HasSubstr("per RGB channel, pixels / 255"));
  const nlohmann::json features = InfoToJson(*info)["features"];
  auto image = std::find_if(features.begin(), features.end(),
                            [](const nlohmann::json& f) { return f["name"] == kImageKey; });
  ASSERT_NE(image, features.end());
  EXPECT_EQ((*image)["image"], true);
  EXPECT_EQ((*image)["dtype"], "uint8");
  EXPECT_EQ((*image)["shape"], nlohmann::json::array({8, 8, 3}));
  EXPECT_EQ(features[0]["image"], false);
}

}  // namespace
}  // namespace roboloop::data
