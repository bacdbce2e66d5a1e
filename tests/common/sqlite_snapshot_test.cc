#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/fs.h"
#include "common/sqlite.h"
#include "tests/registry/test_util.h"

namespace roboloop {
namespace {

class SqliteReadSnapshotTest : public testing::Test {
 protected:
  void SetUp() override {
    path_ = JoinPath(dir_.path(), "snapshot.db");
    writer_ = Open();
    ASSERT_TRUE(writer_->UseWriteAheadLog().ok());
    ASSERT_TRUE(writer_->Exec("CREATE TABLE rows(n INTEGER PRIMARY KEY)").ok());
    ASSERT_TRUE(writer_->Exec("INSERT INTO rows(n) VALUES(1)").ok());
    reader_ = Open();
  }
  std::unique_ptr<SqliteDb> Open() {
    auto db = SqliteDb::Open(path_, 5000);
    EXPECT_TRUE(db.ok()) << db.status();
    return db.ok() ? *std::move(db) : nullptr;
  }
  int64_t Count(SqliteDb& db) { return db.QueryInt("SELECT COUNT(*) FROM rows", {}, -1).value_or(-1); }

  registry::testing_util::ScopedDir dir_;
  std::string path_;
  std::unique_ptr<SqliteDb> writer_, reader_;
};

TEST_F(SqliteReadSnapshotTest, StatementsInsideSeeOneSnapshotAndLaterOnesSeeNewCommits) {
  {
    auto snapshot = SqliteReadSnapshot::Begin(reader_.get());
    ASSERT_TRUE(snapshot.ok()) << snapshot.status();
    EXPECT_TRUE(reader_->InTransaction());
    EXPECT_EQ(Count(*reader_), 1);
    ASSERT_TRUE(writer_->Exec("INSERT INTO rows(n) VALUES(2)").ok());
    EXPECT_EQ(Count(*reader_), 1) << "a commit made during the snapshot must not be visible in it";
  }
  EXPECT_FALSE(reader_->InTransaction());
  EXPECT_EQ(Count(*reader_), 2);
}

TEST_F(SqliteReadSnapshotTest, InsideAnOpenTransactionItLeavesThatTransactionAlone) {
  auto transaction = SqliteTransaction::Begin(writer_.get());
  ASSERT_TRUE(transaction.ok()) << transaction.status();
  ASSERT_TRUE(writer_->Exec("INSERT INTO rows(n) VALUES(3)").ok());
  {
    auto snapshot = SqliteReadSnapshot::Begin(writer_.get());
    ASSERT_TRUE(snapshot.ok()) << snapshot.status();
    EXPECT_EQ(Count(*writer_), 2);
  }
  EXPECT_TRUE(writer_->InTransaction()) << "ending the snapshot must not end the writer's transaction";
  ASSERT_TRUE((*transaction)->Commit().ok());
  EXPECT_EQ(Count(*reader_), 2);
}

}  // namespace
}  // namespace roboloop
