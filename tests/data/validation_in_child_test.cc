// ValidateFileInChildProcess: the same answers as ValidateFile for good and broken files, and a
// file that makes libhdf5 loop forever is an error naming it.
#include "data/validation_in_child.h"

#include <filesystem>
#include <fstream>

#include "data/hdf5_io.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/test_util.h"

namespace roboloop::data {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;
using testing::WriteDataset;

TEST(ValidationInChildTest, AValidFileGivesValidateFilesSummaryAndWarnings) {
  TempDir dir;
  const std::string path = dir.File("d.hdf5");
  WriteDataset(path, {6, 5});
  {
    auto file = h5::OpenFile(path, /*writable=*/true);
    ASSERT_TRUE(file.ok()) << file.status();
    ASSERT_GE(H5Adelete_by_name(file->get(), "data", "total", H5P_DEFAULT), 0);
  }
  auto summary = ValidateFileInChildProcess(path, ValidationOptions(), absl::Seconds(60));
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->demos, 2);
  EXPECT_EQ(summary->total_steps, 11);
  ASSERT_EQ(summary->warnings.size(), 1u);
  EXPECT_EQ(summary->warnings[0].ToString(), "data: missing attribute total");
}

TEST(ValidationInChildTest, AnInvalidFileGivesValidateFilesError) {
  TempDir dir;
  const std::string path = dir.File("absent.hdf5");
  auto summary = ValidateFileInChildProcess(path, ValidationOptions(), absl::Seconds(60));
  EXPECT_EQ(summary.status(), ValidateFile(path, ValidationOptions()).status());
}

// tests/fuzz/third_party_findings/hdf5_h5hg_read_hang.hdf5 makes libhdf5 1.10 (and 2.0) loop
// forever in H5HG_read while it reads the `env_args` attribute (docs/RELIABILITY.md).
TEST(ValidationInChildTest, AFileThatHangsLibhdf5IsAnErrorNamingIt) {
  const std::string path = std::string(ROBOLOOP_THIRD_PARTY_FINDINGS) + "/hdf5_h5hg_read_hang.hdf5";
  auto summary = ValidateFileInChildProcess(path, ValidationOptions(), absl::Seconds(1));
  EXPECT_TRUE(absl::IsDataLoss(summary.status())) << summary.status();
  EXPECT_EQ(summary.status().message(),
            path + ": validation did not finish within 1s and was stopped; the file is likely corrupt "
                   "(libhdf5 can loop forever on one)");
}

// hdf5_h5hg_read_memcpy_overlap.hdf5 makes libhdf5 1.10 copy between overlapping ranges in
// H5HG_read: a SEGV in a plain build, an ASan report (exit code 1) in a sanitized one.
TEST(ValidationInChildTest, AFileThatCrashesLibhdf5IsAnErrorNamingIt) {
  const std::string path = std::string(ROBOLOOP_THIRD_PARTY_FINDINGS) + "/hdf5_h5hg_read_memcpy_overlap.hdf5";
  auto summary = ValidateFileInChildProcess(path, ValidationOptions(), absl::Seconds(60));
  EXPECT_TRUE(absl::IsDataLoss(summary.status())) << summary.status();
  EXPECT_THAT(summary.status().message(), HasSubstr(path + ": validation "));
  EXPECT_THAT(summary.status().message(), HasSubstr("; the file is likely corrupt"));
}

TEST(ValidationInChildTest, TheDefaultTimeLimitGrowsWithTheFile) {
  TempDir dir;
  EXPECT_EQ(DefaultValidationTimeLimit(dir.File("absent.hdf5")), absl::Seconds(60));
  std::ofstream(dir.File("big.hdf5")).close();
  std::filesystem::resize_file(dir.File("big.hdf5"), std::uintmax_t{1} << 30);  // sparse
  EXPECT_EQ(DefaultValidationTimeLimit(dir.File("big.hdf5")), absl::Seconds(60 + 256));
}

TEST(ValidationInChildTest, ScreeningGivesValidateFilesStructureErrors) {
  TempDir dir;
  const std::string path = dir.File("d.hdf5");
  WriteDataset(path, {6, 5});
  EXPECT_TRUE(ScreenFileInChildProcess(path).ok());
  EXPECT_EQ(ScreenFileInChildProcess(dir.File("absent.hdf5")), ValidateFile(dir.File("absent.hdf5"), {}).status());
  {
    auto file = h5::OpenFile(path, /*writable=*/true);
    ASSERT_TRUE(file.ok()) << file.status();
    ASSERT_GE(H5Ldelete(file->get(), "data/demo_1/actions", H5P_DEFAULT), 0);
  }
  const absl::Status structure_error = ValidateFile(path, {}).status();
  ASSERT_FALSE(structure_error.ok());
  EXPECT_EQ(ScreenFileInChildProcess(path), structure_error);
}

}  // namespace
}  // namespace roboloop::data
