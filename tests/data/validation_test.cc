// Every validation error on small broken files made at test time.
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>

#include "data/hdf5_io.h"
#include "data/stats.h"
#include "data/validation.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/test_util.h"

namespace roboloop::data {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;
using testing::WriteDataset;

class ValidationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.File("d.hdf5");
    WriteDataset(path_, {6, 5, 4});
  }

  // Applies `change` to the file opened read-write.
  void Mutate(const std::function<void(hid_t)>& change) {
    auto file = h5::OpenFile(path_, /*writable=*/true);
    ASSERT_TRUE(file.ok()) << file.status();
    change(file->get());
  }

  // Replaces dataset `path` with `array`.
  void Replace(const std::string& path, const Array& array) {
    Mutate([&](hid_t file) {
      ASSERT_TRUE(h5::DeleteIfExists(file, path).ok());
      ASSERT_TRUE(h5::WriteArray(file, path, array, StorageOptions()).ok());
    });
  }

  std::string ErrorOf(NanPolicy policy = NanPolicy::kStrict) {
    ValidationOptions options;
    options.nan_policy = policy;
    auto result = ValidateFile(path_, options);
    return result.ok() ? "OK" : std::string(result.status().message());
  }

  TempDir dir_;
  std::string path_;
};

TEST_F(ValidationTest, GoodFileIsValid) { EXPECT_EQ(ErrorOf(), "OK"); }

TEST_F(ValidationTest, MissingDataGroup) {
  Mutate([](hid_t file) { ASSERT_TRUE(h5::DeleteIfExists(file, "data").ok()); });
  EXPECT_EQ(ErrorOf(), path_ + ": data: missing group");
}

TEST_F(ValidationTest, NoDemos) {
  Mutate([](hid_t file) {
    for (const char* demo : {"data/demo_0", "data/demo_1", "data/demo_2"})
      ASSERT_TRUE(h5::DeleteIfExists(file, demo).ok());
  });
  EXPECT_EQ(ErrorOf(), path_ + ": data: no demos");
}

TEST_F(ValidationTest, NonDemoGroupInData) {
  Mutate([](hid_t file) { ASSERT_TRUE(h5::EnsureGroup(file, "data/extra").ok()); });
  EXPECT_THAT(ErrorOf(), HasSubstr("data/extra: not a demo"));
}

TEST_F(ValidationTest, MissingActions) {
  Mutate([](hid_t file) { ASSERT_TRUE(h5::DeleteIfExists(file, "data/demo_1/actions").ok()); });
  EXPECT_EQ(ErrorOf(), path_ + ": data/demo_1/actions: missing dataset");
}

TEST_F(ValidationTest, MissingObsGroup) {
  Mutate([](hid_t file) { ASSERT_TRUE(h5::DeleteIfExists(file, "data/demo_2/obs").ok()); });
  EXPECT_EQ(ErrorOf(), path_ + ": data/demo_2/obs: missing group");
}

TEST_F(ValidationTest, RaggedLengthWithinDemo) {
  Replace("data/demo_1/obs/qpos", Array::From<float>({4, 3}, std::vector<float>(12, 0.f)));
  EXPECT_EQ(ErrorOf(), path_ + ": data/demo_1/obs/qpos: length 4, expected 5 (actions)");
}

TEST_F(ValidationTest, NumSamplesDisagreesWithActions) {
  Mutate([](hid_t file) {
    auto demo = h5::OpenGroup(file, "data/demo_2", "data/demo_2");
    ASSERT_TRUE(h5::WriteInt64Attr(demo->get(), "num_samples", 7).ok());
  });
  EXPECT_EQ(ErrorOf(), path_ + ": data/demo_2: attribute num_samples 7, expected 4 (actions)");
}

TEST_F(ValidationTest, UnsignedNumSamplesBeyondInt64IsShownAsStored) {
  Mutate([](hid_t file) {
    auto demo = h5::OpenGroup(file, "data/demo_2", "data/demo_2");
    ASSERT_GE(H5Adelete(demo->get(), "num_samples"), 0);
    h5::Handle space(H5Screate(H5S_SCALAR));
    h5::Handle attr(H5Acreate2(demo->get(), "num_samples", H5T_STD_U64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT));
    const uint64_t huge = std::numeric_limits<uint64_t>::max();
    ASSERT_GE(H5Awrite(attr.get(), H5T_NATIVE_UINT64, &huge), 0);
  });
  EXPECT_EQ(ErrorOf(), path_ + ": data/demo_2: attribute num_samples is 18446744073709551615, beyond the int64 range");
}

TEST_F(ValidationTest, MissingNumSamples) {
  Mutate([](hid_t file) { H5Adelete_by_name(file, "data/demo_0", "num_samples", H5P_DEFAULT); });
  EXPECT_EQ(ErrorOf(), path_ + ": data/demo_0: missing attribute num_samples");
}

TEST_F(ValidationTest, TotalDisagreesWithDemos) {
  Mutate([](hid_t file) {
    auto data = h5::OpenGroup(file, "data", "data");
    ASSERT_TRUE(h5::WriteInt64Attr(data->get(), "total", 14).ok());
  });
  EXPECT_EQ(ErrorOf(), path_ + ": data: attribute total 14, expected 15 (sum of num_samples)");
}

TEST_F(ValidationTest, DtypeMismatchAcrossDemos) {
  Replace("data/demo_2/obs/qpos", Array::From<double>({4, 3}, std::vector<double>(12, 0.0)));
  EXPECT_EQ(ErrorOf(), path_ +
                           ": data/demo_2/obs/qpos: float64 [T, 3], but data/demo_0/obs/qpos is float32 [T, 3] "
                           "(every demo must have the same dtype and shape)");
}

TEST_F(ValidationTest, ShapeMismatchAcrossDemos) {
  Replace("data/demo_1/actions", Array::From<float>({5, 2}, std::vector<float>(10, 0.f)));
  EXPECT_THAT(ErrorOf(), HasSubstr("data/demo_1/actions: float32 [T, 2], but data/demo_0/actions is float32 [T, 4]"));
}

TEST_F(ValidationTest, FeatureMissingInOneDemo) {
  Mutate([](hid_t file) { ASSERT_TRUE(h5::DeleteIfExists(file, "data/demo_1/states").ok()); });
  EXPECT_EQ(ErrorOf(), path_ + ": data/demo_1/states: missing (as in data/demo_0)");
}

TEST_F(ValidationTest, ExtraFeatureInOneDemo) {
  Replace("data/demo_2/obs/extra", Array::From<float>({4}, std::vector<float>(4, 0.f)));
  EXPECT_EQ(ErrorOf(), path_ + ": data/demo_2/obs/extra: not present in data/demo_0");
}

TEST_F(ValidationTest, EmptyDemo) {
  Mutate([](hid_t file) {
    for (const char* name : {"actions", "obs/qpos", "obs/qvel", "obs/count", "next_obs/qpos",
                             "rewards", "dones", "states"}) {
      const std::string path = std::string("data/demo_1/") + name;
      auto dataset = h5::OpenDataset(file, path, path);
      hsize_t dims[2] = {0, 0};
      auto shape = h5::Describe(dataset->get(), path);
      for (size_t i = 1; i < shape->dims.size(); ++i) dims[i] = shape->dims[i];
      ASSERT_GE(H5Dset_extent(dataset->get(), dims), 0);
    }
  });
  EXPECT_EQ(ErrorOf(), path_ + ": data/demo_1: empty demo (actions has 0 steps)");
}

TEST_F(ValidationTest, NanIsAnErrorWhenStrictAndAWarningWhenLenient) {
  std::vector<float> values(15, 0.5f);
  values[7] = std::numeric_limits<float>::quiet_NaN();
  values[13] = std::numeric_limits<float>::infinity();
  Replace("data/demo_1/obs/qpos", Array::From<float>({5, 3}, values));
  EXPECT_EQ(ErrorOf(NanPolicy::kStrict),
            path_ + ": data/demo_1/obs/qpos: 2 NaN/Inf values (first at step 2)");
  ValidationOptions lenient;
  lenient.nan_policy = NanPolicy::kLenient;
  auto result = ValidateFile(path_, lenient);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->warnings.size(), 1u);
  EXPECT_EQ(result->warnings[0].ToString(), "data/demo_1/obs/qpos: 2 NaN/Inf values (first at step 2)");
}

TEST(ValidationFramesTest, ACameraFrameThatDoesNotInflateIsAnError) {
  TempDir dir;
  const std::string path = dir.File("frames.hdf5");
  WriteDataset(path, {6, 5}, R"({"env_name": "Lift"})", testing::MakeBandedImageEpisode);
  {
    auto file = h5::OpenFile(path, /*writable=*/true);
    ASSERT_TRUE(file.ok()) << file.status();
    const std::string key = FeaturePath("demo_1", testing::kImageKey);
    auto frames = h5::OpenDataset(file->get(), key, key);
    ASSERT_TRUE(frames.ok()) << frames.status();
    const hsize_t frame_3[4] = {3, 0, 0, 0};
    const std::vector<uint8_t> not_zlib(40, 0xab);
    ASSERT_GE(H5Dwrite_chunk(frames->get(), H5P_DEFAULT, 0, frame_3, not_zlib.size(), not_zlib.data()), 0);
  }
  const auto result = ValidateFile(path, ValidationOptions());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(std::string(result.status().message()),
            path + ": data/demo_1/obs/agentview_image: frame 3: corrupt chunk (not a zlib stream)");
  ValidationOptions structure_only;
  structure_only.scan_values = false;
  EXPECT_TRUE(ValidateFile(path, structure_only).ok());
}

TEST_F(ValidationTest, MaskNamingUnknownDemo) {
  Mutate([](hid_t file) {
    auto mask = h5::EnsureGroup(file, "mask");
    ASSERT_TRUE(h5::WriteStringArray(mask->get(), "train", {"demo_0", "demo_9"}).ok());
  });
  EXPECT_EQ(ErrorOf(), path_ + ": mask/train: unknown demo demo_9");
}

TEST_F(ValidationTest, MaskListingDemoTwice) {
  Mutate([](hid_t file) {
    auto mask = h5::EnsureGroup(file, "mask");
    ASSERT_TRUE(h5::WriteStringArray(mask->get(), "valid", {"demo_1", "demo_1"}).ok());
  });
  EXPECT_EQ(ErrorOf(), path_ + ": mask/valid: demo_1 listed twice");
}

TEST_F(ValidationTest, DemoInBothTrainAndValidMasks) {
  Mutate([](hid_t file) {
    auto mask = h5::EnsureGroup(file, "mask");
    ASSERT_TRUE(h5::WriteStringArray(mask->get(), "train", {"demo_0", "demo_1"}).ok());
    ASSERT_TRUE(h5::WriteStringArray(mask->get(), "valid", {"demo_1"}).ok());
    // robomimic's subset masks may overlap other splits; only a split and its held-out part may not.
    ASSERT_TRUE(h5::WriteStringArray(mask->get(), "20_percent", {"demo_1"}).ok());
  });
  EXPECT_EQ(ErrorOf(), path_ + ": mask/valid: demo_1 is also in mask/train");
}

TEST_F(ValidationTest, DemoInBothSubsetTrainAndValidMasks) {
  Mutate([](hid_t file) {
    auto mask = h5::EnsureGroup(file, "mask");
    ASSERT_TRUE(h5::WriteStringArray(mask->get(), "20_percent_train", {"demo_2"}).ok());
    ASSERT_TRUE(h5::WriteStringArray(mask->get(), "20_percent_valid", {"demo_0", "demo_2"}).ok());
  });
  EXPECT_EQ(ErrorOf(), path_ + ": mask/20_percent_valid: demo_2 is also in mask/20_percent_train");
}

TEST_F(ValidationTest, ExternalLinkIsRefused) {
  const std::string other = dir_.File("other.hdf5");
  WriteDataset(other, {5});
  Mutate([&](hid_t file) {
    ASSERT_TRUE(h5::DeleteIfExists(file, "data/demo_1/actions").ok());
    ASSERT_GE(H5Lcreate_external(other.c_str(), "/data/demo_0/actions", file, "data/demo_1/actions", H5P_DEFAULT,
                                 H5P_DEFAULT),
              0);
  });
  EXPECT_EQ(ErrorOf(), path_ + ": data/demo_1/actions: external link to " + other +
                           ":/data/demo_0/actions (a dataset file must be self-contained: copy the data into the file)");
  ValidationOptions structure_only;
  structure_only.scan_values = false;
  EXPECT_FALSE(ValidateFile(path_, structure_only).ok());
}

TEST_F(ValidationTest, ExternalStorageIsRefused) {
  const std::string raw = dir_.File("actions.raw");
  std::ofstream(raw) << std::string(5 * 4 * sizeof(float), '\0');
  Mutate([&](hid_t file) {
    ASSERT_TRUE(h5::DeleteIfExists(file, "data/demo_1/actions").ok());
    h5::Handle plist(H5Pcreate(H5P_DATASET_CREATE));
    ASSERT_GE(H5Pset_external(plist.get(), raw.c_str(), 0, 5 * 4 * sizeof(float)), 0);
    const hsize_t dims[] = {5, 4};
    h5::Handle space(H5Screate_simple(2, dims, nullptr));
    h5::Handle dataset(H5Dcreate2(file, "data/demo_1/actions", H5T_NATIVE_FLOAT, space.get(), H5P_DEFAULT,
                                  plist.get(), H5P_DEFAULT));
    ASSERT_GE(dataset.get(), 0);
  });
  EXPECT_EQ(ErrorOf(), path_ + ": data/demo_1/actions: values stored in external raw files (a dataset file must be "
                               "self-contained)");
}

// The file's statistics, computed and stored, then changed by `change`; validation's error.
class StoredStatsTest : public ValidationTest {
 protected:
  void SetUp() override {
    ValidationTest::SetUp();
    ASSERT_TRUE(ComputeAndStoreStats(path_, StatsOptions()).ok());
  }
};

TEST_F(StoredStatsTest, ComputedStatisticsAreValid) { EXPECT_EQ(ErrorOf(), "OK"); }

TEST_F(StoredStatsTest, NanStatistic) {
  Replace("stats/actions/std", Array::From<double>({4}, {0.5, NAN, 1, 1}));
  EXPECT_EQ(ErrorOf(NanPolicy::kLenient),
            path_ + ": stats/actions/std: value nan at element 1 (recompute the statistics with `roboloop data stats " +
                path_ + " --write`)");
}

TEST_F(StoredStatsTest, StatisticOfTheWrongShape) {
  Replace("stats/obs/qpos/mean", Array::From<double>({7}, std::vector<double>(7, 0.0)));
  EXPECT_THAT(ErrorOf(), HasSubstr(": stats/obs/qpos/mean: float64 [7], expected float [3] (one value per element "
                                   "of obs/qpos, float32 [T, 3])"));
}

TEST_F(StoredStatsTest, NegativeStd) {
  Replace("stats/obs/qpos/std", Array::From<double>({3}, {1, -2, 1}));
  EXPECT_THAT(ErrorOf(), HasSubstr(": stats/obs/qpos/std: negative value -2 at element 1"));
}

TEST_F(StoredStatsTest, MinAboveMax) {
  Replace("stats/actions/min", Array::From<double>({4}, {9, 9, 9, 9}));
  EXPECT_THAT(ErrorOf(), HasSubstr(": stats/actions: min 9 > max "));
}

TEST_F(StoredStatsTest, StatisticsOfAFeatureTheDemosLack) {
  Mutate([](hid_t file) { ASSERT_TRUE(h5::EnsureGroup(file, "stats/obs/ghost").ok()); });
  Replace("stats/obs/ghost/mean", Array::From<double>({1}, {0.0}));
  EXPECT_THAT(ErrorOf(), HasSubstr(": stats/obs/ghost: statistics of obs/ghost, which is not a vector, scalar or "
                                   "image feature of this file's demos"));
}

TEST_F(StoredStatsTest, StatsIsADataset) {
  Replace("stats", Array::From<double>({1}, {0.0}));
  EXPECT_THAT(ErrorOf(), HasSubstr(path_ + ": stats: not a group"));
}

TEST_F(StoredStatsTest, StructureOnlyLeavesStatisticsToTheFullCheck) {
  // `data stats --write` screens a file structure-only, and must still be able to repair its statistics.
  Replace("stats/actions/std", Array::From<double>({4}, {-1, -1, -1, -1}));
  ValidationOptions structure_only;
  structure_only.scan_values = false;
  EXPECT_TRUE(ValidateFile(path_, structure_only).ok());
}

TEST_F(ValidationTest, EnvArgsNotJson) {
  Mutate([](hid_t file) {
    auto data = h5::OpenGroup(file, "data", "data");
    ASSERT_TRUE(h5::WriteStringAttr(data->get(), "env_args", "{broken").ok());
  });
  EXPECT_EQ(ErrorOf(), path_ + ": data: attribute env_args is not a JSON object");
}

TEST_F(ValidationTest, MissingTotalIsOnlyAWarning) {
  Mutate([](hid_t file) { H5Adelete_by_name(file, "data", "total", H5P_DEFAULT); });
  auto result = ValidateFile(path_, ValidationOptions());
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->warnings.size(), 1u);
  EXPECT_EQ(result->warnings[0].ToString(), "data: missing attribute total");
}

TEST(ValidationFileTest, MissingAndNonHdf5Files) {
  TempDir dir;
  EXPECT_EQ(ValidateFile(dir.File("absent.hdf5"), {}).status().message(),
            dir.File("absent.hdf5") + ": no such file");
  std::ofstream(dir.File("text.hdf5")) << "not hdf5";
  EXPECT_EQ(ValidateFile(dir.File("text.hdf5"), {}).status().message(),
            dir.File("text.hdf5") + ": not an HDF5 file");
}

}  // namespace
}  // namespace roboloop::data
