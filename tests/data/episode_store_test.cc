// The in-memory episode store: contiguous buffers, offsets, splits and the memory check.
#include <cstring>
#include <limits>

#include "data/dataset_writer.h"
#include "data/episode_store.h"
#include "data/validation.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/test_util.h"

namespace roboloop::data {
namespace {

using ::testing::HasSubstr;
using testing::MakeEpisode;
using testing::TempDir;
using testing::WriteDataset;

TEST(EpisodeStoreTest, LoadsSelectedFeaturesContiguously) {
  TempDir dir;
  const std::string path = dir.File("d.hdf5");
  const std::vector<Episode> episodes = WriteDataset(path, {5, 12, 3});
  EpisodeStore::Options options;
  options.path = path;
  options.features = {"actions", "obs/qvel"};
  auto store = EpisodeStore::Load(options);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_EQ((*store)->num_episodes(), 3);
  EXPECT_EQ((*store)->total_steps(), 20);
  EXPECT_EQ((*store)->episode_offset(1), 5);
  EXPECT_EQ((*store)->episode_length(1), 12);
  EXPECT_EQ((*store)->episode_offset(2), 17);
  EXPECT_EQ((*store)->demo_name(2), "demo_2");
  EXPECT_EQ((*store)->memory_bytes(), 20 * 4 * 4 + 20 * 2 * 8);
  auto qvel = (*store)->feature("obs/qvel");
  ASSERT_TRUE(qvel.ok());
  const absl::Span<const double> values = (*qvel)->Values<double>();
  for (int e = 0; e < 3; ++e) {
    const absl::Span<const double> expected = episodes[e].at("obs/qvel").Values<double>();
    const int64_t offset = (*store)->episode_offset(e) * 2;
    for (size_t i = 0; i < expected.size(); ++i) ASSERT_EQ(values[offset + i], expected[i]);
  }
  EXPECT_THAT((*store)->feature("obs/qpos").status().message(), HasSubstr("not loaded"));
}

TEST(EpisodeStoreTest, LoadsOneSplit) {
  TempDir dir;
  DatasetWriter::Options options;
  options.path = dir.File("s.hdf5");
  auto writer = DatasetWriter::Create(options);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE((*writer)->WriteEpisode(MakeEpisode(3 + i, i)).ok());
  ASSERT_TRUE((*writer)->SetMask("valid", {"demo_3", "demo_1"}).ok());
  ASSERT_TRUE((*writer)->Close().ok());
  EpisodeStore::Options store_options;
  store_options.path = options.path;
  store_options.split = "valid";
  store_options.features = {"actions"};
  auto store = EpisodeStore::Load(store_options);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_EQ((*store)->num_episodes(), 2);
  EXPECT_EQ((*store)->demo_name(0), "demo_3");
  EXPECT_EQ((*store)->episode_length(0), 6);
  EXPECT_EQ((*store)->episode_length(1), 4);
  EXPECT_EQ((*store)->total_steps(), 10);
  const auto actions = (*(*store)->feature("actions"))->Values<float>();
  EXPECT_EQ(actions[0], MakeEpisode(6, 3).at("actions").Values<float>()[0]);
  store_options.split = "train";
  EXPECT_THAT(EpisodeStore::Load(store_options).status().message(),
              HasSubstr("no split 'train' (known: valid)"));
}

// QA: a file without masks said "no split 'train' (known: )".
TEST(EpisodeStoreTest, ASplitOfAFileWithoutMasksSaysHowToWriteThem) {
  TempDir dir;
  DatasetWriter::Options options;
  options.path = dir.File("n.hdf5");
  auto writer = DatasetWriter::Create(options);
  ASSERT_TRUE((*writer)->WriteEpisode(MakeEpisode(3, 0)).ok());
  ASSERT_TRUE((*writer)->Close().ok());
  EpisodeStore::Options store_options;
  store_options.path = options.path;
  store_options.split = "train";
  store_options.features = {"actions"};
  EXPECT_THAT(EpisodeStore::Load(store_options).status().message(),
              HasSubstr("n.hdf5: no split 'train' (the file has no masks; `roboloop data split FILE --valid 0.1` "
                        "writes mask/train and mask/valid)"));
}

TEST(EpisodeStoreTest, AsFloat32ConvertsEveryNumericFeatureAndListsTheConversions) {
  TempDir dir;
  const std::string path = dir.File("f64.hdf5");
  const std::vector<Episode> episodes = WriteDataset(path, {4, 3});
  EpisodeStore::Options options;
  options.path = path;
  options.features = {"actions", "obs/qvel", "obs/count"};
  options.as_float32 = true;
  auto store = EpisodeStore::Load(options);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->path(), path);
  ASSERT_EQ((*store)->conversions().size(), 2u);
  EXPECT_EQ((*store)->conversions()[0].feature, "obs/count");
  EXPECT_EQ((*store)->conversions()[0].stored, DType::kInt32);
  EXPECT_EQ((*store)->conversions()[1].feature, "obs/qvel");
  EXPECT_EQ((*store)->conversions()[1].stored, DType::kFloat64);
  EXPECT_EQ((*store)->memory_bytes(), 7 * 4 * 4 + 7 * 2 * 4 + 7 * 4);
  const absl::Span<const float> qvel = (*(*store)->feature("obs/qvel"))->Values<float>();
  const absl::Span<const float> count = (*(*store)->feature("obs/count"))->Values<float>();
  for (int e = 0; e < 2; ++e) {
    const absl::Span<const double> expected = episodes[e].at("obs/qvel").Values<double>();
    const int64_t offset = (*store)->episode_offset(e);
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_EQ(qvel[offset * 2 + i], static_cast<float>(expected[i]));
    }
    ASSERT_EQ(count[offset + 1], static_cast<float>(episodes[e].at("obs/count").Values<int32_t>()[1]));
  }
}

TEST(EpisodeStoreTest, AsFloat32RefusesAValueBeyondTheFloat32Range) {
  TempDir dir;
  DatasetWriter::Options options;
  options.path = dir.File("huge.hdf5");
  auto writer = DatasetWriter::Create(options);
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (int i = 0; i < 2; ++i) {
    Episode episode = MakeEpisode(4, i);
    if (i == 1) episode["obs/qvel"].MutableValues<double>()[2 * 2 + 1] = -1e300;
    ASSERT_TRUE((*writer)->WriteEpisode(episode).ok());
  }
  ASSERT_TRUE((*writer)->Close().ok());
  EpisodeStore::Options store_options;
  store_options.path = options.path;
  store_options.features = {"actions", "obs/qvel"};
  ASSERT_TRUE(EpisodeStore::Load(store_options).ok()) << "float64 as stored holds it";
  store_options.as_float32 = true;
  EXPECT_EQ(EpisodeStore::Load(store_options).status().message(),
            options.path + ": data/demo_1/obs/qvel: -1e+300 at step 2 is beyond the float32 range");
}

TEST(EpisodeStoreTest, RefusesToLoadOverTheMemoryLimit) {
  TempDir dir;
  const std::string path = dir.File("d.hdf5");
  WriteDataset(path, {10, 10});
  EpisodeStore::Options options;
  options.path = path;
  options.features = {"obs/qpos"};
  options.memory_limit_bytes = 20 * 3 * 4 - 1;
  auto refused = EpisodeStore::Load(options);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(), HasSubstr("needs 240 bytes, over the memory limit of 239"));
  options.memory_limit_bytes = 240;
  EXPECT_TRUE(EpisodeStore::Load(options).ok());
  options.features = {"obs/missing"};
  EXPECT_THAT(EpisodeStore::Load(options).status().message(), HasSubstr("no feature 'obs/missing'"));
}

// Writes demos 0-2 of 4 steps; demo_1 gets a NaN in obs/qpos at step 2 and an Inf in
// actions at step 3, demo_2 a NaN in obs/qvel at step 1.
std::string WriteFileWithNonFinite(const TempDir& dir) {
  DatasetWriter::Options options;
  options.path = dir.File("nan.hdf5");
  auto writer = DatasetWriter::Create(options);
  for (int i = 0; i < 3; ++i) {
    Episode episode = MakeEpisode(4, i);
    if (i == 1) {
      episode["obs/qpos"].MutableValues<float>()[2 * 3 + 1] = std::nanf("");
      episode["actions"].MutableValues<float>()[3 * 4] = std::numeric_limits<float>::infinity();
    }
    if (i == 2) episode["obs/qvel"].MutableValues<double>()[1 * 2] = std::nan("");
    EXPECT_TRUE((*writer)->WriteEpisode(episode).ok());
  }
  EXPECT_TRUE((*writer)->SetMask("first", {"demo_0"}).ok());
  EXPECT_TRUE((*writer)->Close().ok());
  return options.path;
}

TEST(EpisodeStoreTest, NonFiniteValuesFailStrictLikeValidateFile) {
  TempDir dir;
  const std::string path = WriteFileWithNonFinite(dir);
  const std::string first_error = ValidateFile(path, ValidationOptions()).status().ToString();
  EXPECT_THAT(first_error,
              HasSubstr(path + ": data/demo_1/actions: 1 NaN/Inf values (first at step 3)"));
  EpisodeStore::Options options;
  options.path = path;
  EXPECT_EQ(EpisodeStore::Load(options).status().ToString(), first_error);  // all loaded
  options.features = {"obs/qvel"};  // demo_1's findings are in features not loaded
  EXPECT_EQ(EpisodeStore::Load(options).status().ToString(), first_error);
  options.split = "first";  // and demo_1 is not loaded at all
  EXPECT_EQ(EpisodeStore::Load(options).status().ToString(), first_error);
  options.validation.scan_values = false;
  EXPECT_TRUE(EpisodeStore::Load(options).ok());
}

TEST(EpisodeStoreTest, NonFiniteValuesAreWarningsWhenLenient) {
  TempDir dir;
  const std::string path = WriteFileWithNonFinite(dir);
  ValidationOptions lenient;
  lenient.nan_policy = NanPolicy::kLenient;
  auto expected = ValidateFile(path, lenient);
  ASSERT_TRUE(expected.ok()) << expected.status();
  ASSERT_EQ(expected->warnings.size(), 3u);
  EpisodeStore::Options options;
  options.path = path;
  options.validation = lenient;
  options.features = {"obs/qpos", "actions"};
  auto store = EpisodeStore::Load(options);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_EQ((*store)->warnings().size(), expected->warnings.size());
  for (size_t i = 0; i < expected->warnings.size(); ++i) {
    EXPECT_EQ((*store)->warnings()[i].ToString(), expected->warnings[i].ToString());
  }
  EXPECT_EQ((*store)->warnings()[0].ToString(),
            "data/demo_1/actions: 1 NaN/Inf values (first at step 3)");
  EXPECT_TRUE(std::isnan((*(*store)->feature("obs/qpos"))->Values<float>()[4 * 3 + 2 * 3 + 1]));
}

}  // namespace
}  // namespace roboloop::data
