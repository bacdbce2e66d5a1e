#include "common/sqlite_checkpointer.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/fs.h"
#include "common/sqlite.h"
#include "tests/registry/test_util.h"

namespace roboloop {
namespace {

constexpr int kCommits = 3000;
constexpr int kFrames = 100;
constexpr int kCommitsPerWait = 200;

int64_t FileSize(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 ? static_cast<int64_t>(info.st_size) : -1;
}

class WalCheckpointerTest : public testing::Test {
 protected:
  void SetUp() override {
    path_ = JoinPath(dir_.path(), "log.db");
    auto db = SqliteDb::Open(path_, 5000);
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = *std::move(db);
    ASSERT_TRUE(db_->UseWriteAheadLog().ok());
    ASSERT_TRUE(db_->Exec("PRAGMA synchronous = NORMAL").ok());
    ASSERT_TRUE(db_->Exec("CREATE TABLE rows(n INTEGER PRIMARY KEY, payload TEXT NOT NULL)").ok());
  }
  int64_t CountRows() {
    auto reader = SqliteDb::Open(path_, 5000, /*create=*/false);
    EXPECT_TRUE(reader.ok()) << reader.status();
    auto count = (*reader)->QueryInt("SELECT COUNT(*) FROM rows", {}, -1);
    EXPECT_TRUE(count.ok()) << count.status();
    return count.value_or(-1);
  }
  // Waits up to 10 s for the background checkpointer to finish a pass beyond `seen`.
  bool WaitForPassAfter(int seen) {
    for (int waited_ms = 0; waited_ms < 10000; waited_ms += 5) {
      if (db_->checkpoint_passes() > seen) return true;
      absl::SleepFor(absl::Milliseconds(5));
    }
    return false;
  }
  registry::testing_util::ScopedDir dir_;
  std::string path_;
  std::unique_ptr<SqliteDb> db_;
  absl::Mutex writers_;
};

TEST_F(WalCheckpointerTest, BackgroundPassesRestartTheLogAndLoseNothing) {
  ASSERT_TRUE(db_->CheckpointInBackground(&writers_, kFrames).ok());
  const std::string payload(3072, 'r');
  int passes_seen = 0;
  for (int i = 0; i < kCommits; ++i) {
    {
      absl::MutexLock lock(&writers_);
      ASSERT_TRUE(db_->Run("INSERT INTO rows(n, payload) VALUES(?1, ?2)", {int64_t{i}, payload}).ok());
    }
    if (i % kCommitsPerWait == kCommitsPerWait - 1) {
      ASSERT_TRUE(WaitForPassAfter(passes_seen)) << "no background checkpoint after commit " << i;
      passes_seen = db_->checkpoint_passes();
    }
  }
  // Every commit adds about three 4 KiB frames: a log that never restarted would hold all of them
  // (37 MB). The file keeps its high-water mark, which depends on how soon the background pass runs:
  // 10 MB at most was seen with the machine loaded by a parallel ctest. 20 waits' rows (16 MB) leave
  // room for that and still fail a log that never restarts.
  EXPECT_LT(FileSize(path_ + "-wal"), int64_t{20} * kCommitsPerWait * 4096);
  EXPECT_EQ(CountRows(), kCommits);
}

TEST(WalCheckpointer, UnopenableDatabaseIsAnErrorNamingIt) {
  absl::Mutex writers;
  auto checkpointer = WalCheckpointer::Start(nullptr, "/nonexistent-dir/x.db", &writers, 10, 100);
  ASSERT_FALSE(checkpointer.ok());
  EXPECT_NE(checkpointer.status().message().find("/nonexistent-dir/x.db"), std::string::npos)
      << checkpointer.status();
}

}  // namespace
}  // namespace roboloop
