#include "common/fs.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "common/ids.h"

namespace roboloop {
namespace {

class FsTest : public testing::Test {
 protected:
  void SetUp() override { dir_ = JoinPath(testing::TempDir(), "fs-" + NewUuid()); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(FsTest, MakeDirsCreatesNestedAndAcceptsExisting) {
  std::string nested = JoinPath(dir_, "a/b/c");
  ASSERT_TRUE(MakeDirs(nested).ok());
  EXPECT_TRUE(std::filesystem::is_directory(nested));
  EXPECT_TRUE(MakeDirs(nested).ok());
}

TEST_F(FsTest, MakeDirsOverAFileFails) {
  ASSERT_TRUE(MakeDirs(dir_).ok());
  std::string file = JoinPath(dir_, "f");
  ASSERT_TRUE(WriteFileAtomic(file, "x").ok());
  absl::Status status = MakeDirs(file);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(FsTest, AtomicWriteReplacesContentAndLeavesNoTemp) {
  ASSERT_TRUE(MakeDirs(dir_).ok());
  std::string path = JoinPath(dir_, "file.txt");
  ASSERT_TRUE(WriteFileAtomic(path, "first").ok());
  ASSERT_TRUE(WriteFileAtomic(path, "second version").ok());
  auto content = ReadFile(path);
  ASSERT_TRUE(content.ok());
  EXPECT_EQ(*content, "second version");
  auto names = ListDir(dir_);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, std::vector<std::string>{"file.txt"});
  EXPECT_EQ(*FileSize(path), 14);
}

TEST_F(FsTest, ReadAndRemoveMissingAreNotFound) {
  EXPECT_EQ(ReadFile(JoinPath(dir_, "none")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(RemoveFile(JoinPath(dir_, "none")).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(FileSize(JoinPath(dir_, "none")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(PathExists(JoinPath(dir_, "none")));
}

TEST_F(FsTest, WriteIntoMissingDirectoryFailsWithPath) {
  absl::Status status = WriteFileAtomic(JoinPath(dir_, "no/such/dir/f"), "x");
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("no/such/dir"), std::string::npos);
}

TEST(PathHelpers, JoinAndParent) {
  EXPECT_EQ(JoinPath("a", "b"), "a/b");
  EXPECT_EQ(JoinPath("a/", "/b"), "a/b");
  EXPECT_EQ(JoinPath("", "b"), "b");
  EXPECT_EQ(ParentDir("/x/y/z"), "/x/y");
  EXPECT_EQ(ParentDir("z"), ".");
  EXPECT_EQ(ParentDir("/z"), "/");
}

TEST(PathSafety, AcceptsPlainRelativePaths) {
  EXPECT_TRUE(CheckSafeRelativePath("a").ok());
  EXPECT_TRUE(CheckSafeRelativePath("a/b.c/d..e").ok());
}

TEST(PathSafety, RejectsTraversalAbsoluteAndNul) {
  for (std::string bad : {std::string(""), std::string("/etc/passwd"), std::string("../x"),
                          std::string("a/../../x"), std::string("a/.."), std::string("a//b"),
                          std::string("a\0b", 3)}) {
    absl::Status status = CheckSafeRelativePath(bad);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(status.message().find("unsafe path"), std::string::npos);
  }
}

}  // namespace
}  // namespace roboloop
