// Opens databases written by older (and newer) schema versions with the current code.
#include <sqlite3.h>

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "common/fs.h"
#include "common/sha256.h"
#include "registry/catalog.h"
#include "tests/registry/test_util.h"

namespace roboloop::registry {
namespace {

using testing_util::ScopedDir;

// The version-1 schema, written out by hand as an older build created it.
constexpr char kSchemaV1[] = R"sql(
CREATE TABLE schema_version(version INTEGER NOT NULL);
INSERT INTO schema_version VALUES(1);
CREATE TABLE models(name TEXT PRIMARY KEY, created_us INTEGER NOT NULL);
CREATE TABLE datasets(id TEXT PRIMARY KEY, name TEXT NOT NULL, version INTEGER NOT NULL,
  blob_sha256 TEXT NOT NULL, blob_size INTEGER NOT NULL, metadata_json TEXT NOT NULL,
  created_us INTEGER NOT NULL, UNIQUE(name, version));
CREATE TABLE dataset_parents(dataset_id TEXT NOT NULL REFERENCES datasets(id),
  parent_id TEXT NOT NULL REFERENCES datasets(id), PRIMARY KEY(dataset_id, parent_id));
CREATE TABLE checkpoints(id TEXT PRIMARY KEY, model TEXT NOT NULL REFERENCES models(name),
  version INTEGER NOT NULL, step INTEGER NOT NULL, run_id TEXT NOT NULL,
  dataset_id TEXT REFERENCES datasets(id), parent_id TEXT REFERENCES checkpoints(id),
  config_json TEXT NOT NULL, metrics_json TEXT NOT NULL, created_us INTEGER NOT NULL,
  manifest_json TEXT NOT NULL, UNIQUE(model, version));
CREATE TABLE checkpoint_blobs(checkpoint_id TEXT NOT NULL REFERENCES checkpoints(id),
  role TEXT NOT NULL, sha256 TEXT NOT NULL, size INTEGER NOT NULL,
  PRIMARY KEY(checkpoint_id, role));
CREATE TABLE aliases(model TEXT NOT NULL REFERENCES models(name), alias TEXT NOT NULL,
  checkpoint_id TEXT NOT NULL REFERENCES checkpoints(id), PRIMARY KEY(model, alias));
CREATE TABLE alias_history(seq INTEGER PRIMARY KEY AUTOINCREMENT, model TEXT NOT NULL,
  alias TEXT NOT NULL, checkpoint_id TEXT NOT NULL, previous_id TEXT NOT NULL,
  reason TEXT NOT NULL, time_us INTEGER NOT NULL);
)sql";

void RunSql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  std::string message = error ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << message;
}

// Column `column` of every row of `sql` run on the database at `path`, joined by newlines.
std::string QueryColumn(const std::string& path, const std::string& sql, int column) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* statement = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &statement, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  std::string rows;
  while (statement != nullptr && sqlite3_step(statement) == SQLITE_ROW) {
    const unsigned char* text = sqlite3_column_text(statement, column);
    absl::StrAppend(&rows, text != nullptr ? reinterpret_cast<const char*>(text) : "NULL", "\n");
  }
  sqlite3_finalize(statement);
  sqlite3_close(db);
  return rows;
}

std::string OldCheckpointRows(const std::string& id) {
  return absl::StrCat(
      "INSERT INTO models VALUES('old-model', 1);"
      "INSERT INTO checkpoints VALUES('", id, "', 'old-model', 1, 100, 'run-1', NULL, NULL, '{}',"
      " '{\"loss\":0.1}', 1000, '{}');"
      "INSERT INTO checkpoint_blobs VALUES('", id, "', 'policy', '", Sha256Hex("w"), "', 1);"
      "INSERT INTO aliases VALUES('old-model', 'latest', '", id, "');"
      "INSERT INTO alias_history(model, alias, checkpoint_id, previous_id, reason, time_us)"
      " VALUES('old-model', 'latest', '", id, "', '', 'registered version 1', 1000);");
}

TEST(CatalogMigration, VersionOneDatabaseIsMigratedAndKeepsItsRows) {
  ScopedDir dir;
  std::string path = JoinPath(dir.path(), "catalog.db");
  std::string id = Sha256Hex("old manifest");
  RunSql(path, std::string(kSchemaV1) + OldCheckpointRows(id));

  Catalog::Options options;
  options.path = path;
  auto catalog = Catalog::Create(options);
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  EXPECT_EQ(*(*catalog)->SchemaVersion(), Catalog::LatestSchemaVersion());

  auto old = (*catalog)->GetCheckpoint(id);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->step(), 100);
  EXPECT_EQ(old->aliases(0), "latest");
  auto history = (*catalog)->AliasHistory("old-model", "latest");
  ASSERT_TRUE(history.ok()) << history.status();
  ASSERT_EQ(history->size(), 1u);
  EXPECT_EQ((*history)[0].user(), "");  // v1 did not record who

  CheckpointRecord record;
  record.manifest_json = "{\"new\":1}";
  record.id = Sha256Hex(record.manifest_json);
  record.model = "old-model";
  record.config_json = record.metrics_json = "{}";
  auto inserted = (*catalog)->InsertCheckpoint(record, {"carol", "box"});
  ASSERT_TRUE(inserted.ok()) << inserted.status();
  EXPECT_EQ(inserted->value.version(), 2);
  history = (*catalog)->AliasHistory("old-model", "latest");
  ASSERT_EQ(history->size(), 2u);
  EXPECT_EQ((*history)[1].user(), "carol");
  EXPECT_EQ((*history)[1].host(), "box");
  EXPECT_EQ((*history)[1].previous_id(), id);
}

TEST(CatalogMigration, AnOldDatabaseStartsWithNoStoredBytesPerCaller) {
  ScopedDir dir;
  std::string path = JoinPath(dir.path(), "catalog.db");
  RunSql(path, std::string(kSchemaV1) + OldCheckpointRows(Sha256Hex("old manifest")));
  Catalog::Options options;
  options.path = path;
  auto catalog = Catalog::Create(options);
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  EXPECT_EQ(*(*catalog)->BytesUploadedBy("alice"), 0);
  ASSERT_TRUE((*catalog)->RecordBlobUpload(Sha256Hex("w"), "alice", 7).ok());
  ASSERT_TRUE((*catalog)->RecordBlobUpload(Sha256Hex("w"), "bob", 7).ok());
  EXPECT_EQ(*(*catalog)->BytesUploadedBy("alice"), 7);
  EXPECT_EQ(*(*catalog)->BytesUploadedBy("bob"), 0);  // the first uploader keeps the blob
  ASSERT_TRUE((*catalog)->ForgetBlobUpload(Sha256Hex("w")).ok());
  EXPECT_EQ(*(*catalog)->BytesUploadedBy("alice"), 0);
}

TEST(CatalogMigration, AliasHistoryKeepsItsNumbersAndNewMovesFollowThem) {
  ScopedDir dir;
  std::string path = JoinPath(dir.path(), "catalog.db");
  std::string id = Sha256Hex("old manifest");
  RunSql(path, std::string(kSchemaV1) + OldCheckpointRows(id) + "UPDATE alias_history SET seq = 41;");
  Catalog::Options options;
  options.path = path;
  auto catalog = Catalog::Create(options);
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  CheckpointRecord record;
  record.manifest_json = "{\"new\":1}";
  record.id = Sha256Hex(record.manifest_json);
  record.model = "old-model";
  record.config_json = record.metrics_json = "{}";
  ASSERT_TRUE((*catalog)->InsertCheckpoint(record, {"carol", "box"}).ok());
  catalog->reset();
  EXPECT_EQ(QueryColumn(path, "SELECT seq FROM alias_history ORDER BY seq", 0), "41\n42\n");
  EXPECT_EQ(QueryColumn(path, "SELECT COUNT(*) FROM sqlite_sequence WHERE name = 'alias_history'", 0), "0\n")
      << "an alias move must no longer write sqlite_sequence";
}

TEST(CatalogMigration, DatasetAndParentLookupsUseTheirPartialIndexes) {
  ScopedDir dir;
  Catalog::Options options;
  options.path = JoinPath(dir.path(), "catalog.db");
  ASSERT_TRUE(Catalog::Create(options).ok());
  EXPECT_NE(QueryColumn(options.path, "EXPLAIN QUERY PLAN SELECT id FROM checkpoints WHERE dataset_id = 'd'", 3)
                .find("checkpoints_by_dataset"),
            std::string::npos);
  EXPECT_NE(QueryColumn(options.path, "EXPLAIN QUERY PLAN SELECT id FROM checkpoints WHERE parent_id = 'p'", 3)
                .find("checkpoints_by_parent"),
            std::string::npos);
}

TEST(CatalogMigration, MigrationIsIdempotentAcrossReopens) {
  ScopedDir dir;
  Catalog::Options options;
  options.path = JoinPath(dir.path(), "catalog.db");
  for (int i = 0; i < 3; ++i) {
    auto catalog = Catalog::Create(options);
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    EXPECT_EQ(*(*catalog)->SchemaVersion(), Catalog::LatestSchemaVersion());
  }
}

TEST(CatalogMigration, NewerSchemaIsRefusedUntouched) {
  ScopedDir dir;
  std::string path = JoinPath(dir.path(), "catalog.db");
  RunSql(path, "CREATE TABLE schema_version(version INTEGER NOT NULL);"
               "INSERT INTO schema_version VALUES(999);");
  Catalog::Options options;
  options.path = path;
  auto catalog = Catalog::Create(options);
  EXPECT_EQ(catalog.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(catalog.status().message().find("999"), std::string::npos);
}

TEST(CatalogMigration, NotADatabaseIsReported) {
  ScopedDir dir;
  std::string path = JoinPath(dir.path(), "catalog.db");
  ASSERT_TRUE(WriteFileAtomic(path, std::string(8192, 'x')).ok());
  Catalog::Options options;
  options.path = path;
  auto catalog = Catalog::Create(options);
  EXPECT_FALSE(catalog.ok());
  EXPECT_NE(catalog.status().message().find(path), std::string::npos);
}

}  // namespace
}  // namespace roboloop::registry
