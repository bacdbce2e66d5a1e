// Every validation error on small broken files made at test time.
#include <fstream>
#include <functional>
#include <limits>

#include "data/hdf5_io.h"
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
                           ": data/demo_2/obs/qpos: float64 [T, 3], expected float32 [T, 3] (as "
                           "in data/demo_0)");
}

TEST_F(ValidationTest, ShapeMismatchAcrossDemos) {
  Replace("data/demo_1/actions", Array::From<float>({5, 2}, std::vector<float>(10, 0.f)));
  EXPECT_THAT(ErrorOf(), HasSubstr("data/demo_1/actions: float32 [T, 2], expected float32 [T, 4]"));
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
