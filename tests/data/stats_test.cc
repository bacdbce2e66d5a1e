// Statistics against a direct computation, their storage and their limits.
#include <algorithm>
#include <cmath>

#include "data/stats.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/test_util.h"

namespace roboloop::data {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;
using testing::WriteDataset;

// numpy.quantile(values, q) (method "linear"), computed from a fully sorted copy.
double DirectQuantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const double h = (values.size() - 1) * q;
  const double lower = values[static_cast<size_t>(std::floor(h))];
  const double upper = values[static_cast<size_t>(std::ceil(h))];
  return lower + (h - std::floor(h)) * (upper - lower);
}

// Every value of element `element` of `feature` over all episodes.
std::vector<double> Column(const std::vector<Episode>& episodes, const std::string& feature,
                           int element) {
  std::vector<double> column;
  for (const Episode& episode : episodes) {
    const Array& array = episode.at(feature);
    const int64_t width = array.ElementsPerStep();
    for (int64_t t = 0; t < array.Steps(); ++t) column.push_back(array.ValueAsDouble(t * width + element));
  }
  return column;
}

TEST(QuantileTest, MatchesNumpyLinearInterpolation) {
  EXPECT_DOUBLE_EQ(Quantile({1, 2, 3, 4, 5}, 0.25), 2.0);
  EXPECT_DOUBLE_EQ(Quantile({1, 2, 3, 4}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(Quantile({10, 20}, 0.99), 19.9);
  EXPECT_DOUBLE_EQ(Quantile({7}, 0.01), 7.0);
}

TEST(StatsTest, ExactStatisticsMatchDirectComputation) {
  TempDir dir;
  const std::string path = dir.File("d.hdf5");
  const std::vector<Episode> episodes = WriteDataset(path, {40, 73, 11});
  auto stats = ComputeAndStoreStats(path, StatsOptions());
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_EQ(stats->size(), 8u);
  for (const FeatureStats& feature : *stats) {
    EXPECT_EQ(feature.count, 124) << feature.name;
    for (size_t e = 0; e < feature.mean.size(); ++e) {
      const std::vector<double> column = Column(episodes, feature.name, e);
      double sum = 0, squares = 0;
      for (double v : column) sum += v;
      const double mean = sum / column.size();
      for (double v : column) squares += (v - mean) * (v - mean);
      EXPECT_NEAR(feature.mean[e], mean, 1e-12) << feature.name << "[" << e << "]";
      EXPECT_NEAR(feature.std[e], std::sqrt(squares / column.size()), 1e-12) << feature.name;
      EXPECT_EQ(feature.min[e], *std::min_element(column.begin(), column.end())) << feature.name;
      EXPECT_EQ(feature.max[e], *std::max_element(column.begin(), column.end())) << feature.name;
      EXPECT_DOUBLE_EQ(feature.q01[e], DirectQuantile(column, 0.01)) << feature.name;
      EXPECT_DOUBLE_EQ(feature.q99[e], DirectQuantile(column, 0.99)) << feature.name;
    }
  }
  const FeatureStats& qpos = *std::find_if(stats->begin(), stats->end(),
                                           [](const FeatureStats& s) { return s.name == "obs/qpos"; });
  EXPECT_EQ(qpos.mean.size(), 3u);
}

TEST(StatsTest, StoredStatisticsReadBackAndExportAsJson) {
  TempDir dir;
  const std::string path = dir.File("d.hdf5");
  WriteDataset(path, {9, 9});
  auto absent = LoadStats(path);
  ASSERT_TRUE(absent.ok()) << absent.status();
  EXPECT_FALSE(absent->has_value());
  auto computed = ComputeAndStoreStats(path, StatsOptions());
  ASSERT_TRUE(computed.ok());
  auto loaded = LoadStats(path);
  ASSERT_TRUE(loaded.ok() && loaded->has_value()) << loaded.status();
  ASSERT_EQ((*loaded)->size(), computed->size());
  for (size_t i = 0; i < computed->size(); ++i) {
    EXPECT_EQ((**loaded)[i].name, (*computed)[i].name);
    EXPECT_EQ((**loaded)[i].mean, (*computed)[i].mean);
    EXPECT_EQ((**loaded)[i].q99, (*computed)[i].q99);
    EXPECT_EQ((**loaded)[i].count, 18);
  }
  const nlohmann::json json = StatsToJson(*computed);
  EXPECT_EQ(json["actions"]["count"], 18);
  EXPECT_EQ(json["actions"]["mean"].size(), 4u);
  ASSERT_EQ((*computed)[5].name, "obs/qvel");
  EXPECT_EQ(json["obs/qvel"]["max"][1].get<double>(), (*computed)[5].max[1]);
  // Storing again replaces rather than duplicates.
  ASSERT_TRUE(ComputeAndStoreStats(path, StatsOptions()).ok());
  EXPECT_EQ((*LoadStats(path))->size(), computed->size());
}

TEST(StatsTest, MemoryLimitIsCheckedBeforeGathering) {
  TempDir dir;
  const std::string path = dir.File("d.hdf5");
  WriteDataset(path, {50});
  StatsOptions options;
  options.memory_limit_bytes = 8 * 50 * 3;  // obs/qpos fits exactly, actions (4 wide) does not
  auto stats = ComputeAndStoreStats(path, options);
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(stats.status().message(), HasSubstr("statistics of actions need 1600 bytes"));
}

// A cancelled token (data merge and export lerobot pass Ctrl-C's) stops the computation with Cancelled.
TEST(StatsTest, ACancelledComputationStops) {
  TempDir dir;
  const std::string path = dir.File("d.hdf5");
  WriteDataset(path, {5});
  common::CancellationToken cancel;
  cancel.Cancel("received SIGTERM");
  StatsOptions options;
  options.cancel = &cancel;
  const absl::StatusOr<DatasetStats> stats = ComputeFileStats(path, options);
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(stats.status().message(), "statistics of " + path + " cancelled (received SIGTERM)");
}

}  // namespace
}  // namespace roboloop::data
