#include "common/fs.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
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

// The permission bits of `path`.
mode_t ModeOf(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

TEST_F(FsTest, MakeReadOnlyTakesOffEveryWriteBitAndKeepsTheRest) {
  ASSERT_TRUE(MakeDirs(dir_).ok());
  const std::string path = JoinPath(dir_, "cached");
  ASSERT_TRUE(WriteFileAtomic(path, "x").ok());
  ASSERT_EQ(chmod(path.c_str(), 0776), 0);
  ASSERT_TRUE(MakeReadOnly(path).ok());
  EXPECT_EQ(ModeOf(path), 0554);
  ASSERT_TRUE(MakeOwnFileReadOnly(path).ok());
  EXPECT_EQ(ModeOf(path), 0554);
  EXPECT_EQ(MakeOwnFileReadOnly(JoinPath(dir_, "missing")).code(), absl::StatusCode::kNotFound);
}

// A cache shared by several users: a file root wrote stays as it is for user `nobody`, who may
// not change its mode; MakeReadOnly says so, MakeOwnFileReadOnly accepts the file.
TEST_F(FsTest, AnotherUsersCachedFileIsLeftAsItIs) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to act as another user";
  // Under /tmp: the test's own temp folder (TMPDIR) is closed to other users.
  dir_ = JoinPath("/tmp", "roboloop-shared-" + NewUuid());
  ASSERT_TRUE(MakeDirs(dir_).ok());
  ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
  const std::string path = JoinPath(dir_, "shared");
  ASSERT_TRUE(WriteFileAtomic(path, "x").ok());
  ASSERT_EQ(chmod(path.c_str(), 0666), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (setuid(65534) != 0) _exit(3);
    if (MakeReadOnly(path).ok()) _exit(4);
    const absl::Status own = MakeOwnFileReadOnly(path);
    if (!own.ok()) fprintf(stderr, "%s\n", own.ToString().c_str());
    _exit(own.ok() ? 0 : 5);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: setuid failed, 4: MakeReadOnly changed another user's file, "
                                       "5: MakeOwnFileReadOnly refused it";
  EXPECT_EQ(ModeOf(path), 0666);
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
