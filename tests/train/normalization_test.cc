// Normalization statistics from an EpisodeStore and their JSON form.
#include "train/normalization.h"

#include <cmath>

#include "data/dataset_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/test_util.h"

namespace roboloop::train {
namespace {

using ::testing::HasSubstr;

std::shared_ptr<const data::EpisodeStore> LoadStore(const std::string& path) {
  data::EpisodeStore::Options options;
  options.path = path;
  auto store = data::EpisodeStore::Load(options);
  EXPECT_TRUE(store.ok()) << store.status();
  return std::move(store).value();
}

// Mean and population std of column `e` of `width`-wide rows over all episodes' `feature`.
std::pair<double, double> ColumnStats(const std::vector<data::Episode>& episodes,
                                      const std::string& feature, int width, int e) {
  std::vector<double> values;
  for (const data::Episode& episode : episodes) {
    const absl::Span<const float> all = episode.at(feature).Values<float>();
    for (size_t i = e; i < all.size(); i += width) values.push_back(all[i]);
  }
  double sum = 0;
  for (double v : values) sum += v;
  const double mean = sum / values.size();
  double squares = 0;
  for (double v : values) squares += (v - mean) * (v - mean);
  return {mean, std::sqrt(squares / values.size())};
}

TEST(NormalizationTest, ComputesExactMeanAndPopulationStd) {
  data::testing::TempDir dir;
  const std::string path = dir.File("d.hdf5");
  const std::vector<data::Episode> episodes = data::testing::WriteDataset(path, {7, 3, 11});
  auto norm = NormalizationFromStore(*LoadStore(path), {"obs/qpos", "next_obs/qpos"}, "actions");
  ASSERT_TRUE(norm.ok()) << norm.status();
  ASSERT_EQ(norm->obs_mean.size(), 6u);
  ASSERT_EQ(norm->action_mean.size(), 4u);
  for (int e = 0; e < 6; ++e) {
    const auto [mean, std] =
        ColumnStats(episodes, e < 3 ? "obs/qpos" : "next_obs/qpos", 3, e % 3);
    EXPECT_FLOAT_EQ(norm->obs_mean[e], mean) << e;
    EXPECT_FLOAT_EQ(norm->obs_std[e], std) << e;
  }
  for (int e = 0; e < 4; ++e) {
    const auto [mean, std] = ColumnStats(episodes, "actions", 4, e);
    EXPECT_FLOAT_EQ(norm->action_mean[e], mean);
    EXPECT_FLOAT_EQ(norm->action_std[e], std);
  }
}

TEST(NormalizationTest, ConstantFeaturesAreCentredNotScaled) {
  data::testing::TempDir dir;
  data::DatasetWriter::Options options;
  options.path = dir.File("c.hdf5");
  auto writer = data::DatasetWriter::Create(options);
  ASSERT_TRUE(writer.ok());
  data::Episode episode;
  episode["actions"] = data::Array::From<float>({4, 1}, {1, 2, 3, 4});
  episode["obs/c"] = data::Array::From<float>({4, 2}, {5, 0, 5, 1, 5, 0, 5, 1});
  ASSERT_TRUE((*writer)->WriteEpisode(episode).ok());
  ASSERT_TRUE((*writer)->Close().ok());
  auto norm = NormalizationFromStore(*LoadStore(options.path), {"obs/c"}, "actions");
  ASSERT_TRUE(norm.ok()) << norm.status();
  EXPECT_EQ(norm->obs_mean, (std::vector<float>{5.0f, 0.5f}));
  EXPECT_EQ(norm->obs_std, (std::vector<float>{1.0f, 0.5f}));
  EXPECT_FLOAT_EQ(norm->action_mean[0], 2.5f);
  EXPECT_FLOAT_EQ(norm->action_std[0], std::sqrt(1.25f));
}

TEST(NormalizationTest, RejectsMissingAndNonFloat32Features) {
  data::testing::TempDir dir;
  const std::string path = dir.File("d.hdf5");
  data::testing::WriteDataset(path, {4});
  auto store = LoadStore(path);
  EXPECT_THAT(NormalizationFromStore(*store, {"obs/qvel"}, "actions").status().message(),
              HasSubstr("obs feature 'obs/qvel' is float64"));
  EXPECT_THAT(NormalizationFromStore(*store, {"obs/nope"}, "actions").status().message(),
              HasSubstr("obs feature 'obs/nope'"));
  EXPECT_THAT(NormalizationFromStore(*store, {"obs/qpos"}, "rewards").status().message(),
              HasSubstr("action feature 'rewards' is float64"));
}

TEST(NormalizationTest, JsonRoundTrips) {
  const Normalization norm{{1.5f, -2.0f}, {0.25f, 3.0f}, {0.0f}, {1.0f}};
  const nlohmann::json json = NormalizationToJson(norm);
  EXPECT_EQ(json["obs"]["mean"], nlohmann::json({1.5, -2.0}));
  EXPECT_EQ(json["action"]["std"], nlohmann::json({1.0}));
  auto parsed = NormalizationFromJson(json);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->obs_mean, norm.obs_mean);
  EXPECT_EQ(parsed->obs_std, norm.obs_std);
  EXPECT_EQ(parsed->action_mean, norm.action_mean);
  EXPECT_EQ(parsed->action_std, norm.action_std);
}

TEST(NormalizationTest, JsonErrorsNameTheKey) {
  const nlohmann::json good = NormalizationToJson({{1}, {2}, {3}, {4}});
  auto message = [](const nlohmann::json& json) {
    return std::string(NormalizationFromJson(json).status().message());
  };
  nlohmann::json json = good;
  json.erase("action");
  EXPECT_THAT(message(json), HasSubstr("missing object 'action'"));
  json = good;
  json["obs"].erase("std");
  EXPECT_THAT(message(json), HasSubstr("missing key 'obs.std'"));
  json = good;
  json["action"]["mean"] = "zero";
  EXPECT_THAT(message(json), HasSubstr("'action.mean' is not an array"));
  json = good;
  json["obs"]["mean"] = {1, "x"};
  EXPECT_THAT(message(json), HasSubstr("'obs.mean'[1] is not a number"));
  json = good;
  json["obs"]["std"] = {1, 2};
  EXPECT_THAT(message(json), HasSubstr("'obs.mean' has 1 entries but 'obs.std' has 2"));
  json = good;
  json["action"]["std"] = {0};
  EXPECT_THAT(message(json), HasSubstr("'action.std'[0] is 0; must be > 0"));
}

}  // namespace
}  // namespace roboloop::train
