#include "registry/catalog_schema.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace roboloop::registry {
namespace {

struct Migration {
  int version;      // schema version after this step
  const char* sql;  // statements bringing version - 1 to version
};

// Ordered migrations. Never edit a shipped step: append a new one.
const std::vector<Migration>& Migrations() {
  static const std::vector<Migration> kMigrations = {
      {1, R"sql(
CREATE TABLE models(
  name TEXT PRIMARY KEY,
  created_us INTEGER NOT NULL);
CREATE TABLE datasets(
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  version INTEGER NOT NULL,
  blob_sha256 TEXT NOT NULL,
  blob_size INTEGER NOT NULL,
  metadata_json TEXT NOT NULL,
  created_us INTEGER NOT NULL,
  UNIQUE(name, version));
CREATE TABLE dataset_parents(
  dataset_id TEXT NOT NULL REFERENCES datasets(id),
  parent_id TEXT NOT NULL REFERENCES datasets(id),
  PRIMARY KEY(dataset_id, parent_id));
CREATE TABLE checkpoints(
  id TEXT PRIMARY KEY,
  model TEXT NOT NULL REFERENCES models(name),
  version INTEGER NOT NULL,
  step INTEGER NOT NULL,
  run_id TEXT NOT NULL,
  dataset_id TEXT REFERENCES datasets(id),
  parent_id TEXT REFERENCES checkpoints(id),
  config_json TEXT NOT NULL,
  metrics_json TEXT NOT NULL,
  created_us INTEGER NOT NULL,
  manifest_json TEXT NOT NULL,
  UNIQUE(model, version));
CREATE TABLE checkpoint_blobs(
  checkpoint_id TEXT NOT NULL REFERENCES checkpoints(id),
  role TEXT NOT NULL,
  sha256 TEXT NOT NULL,
  size INTEGER NOT NULL,
  PRIMARY KEY(checkpoint_id, role));
CREATE TABLE aliases(
  model TEXT NOT NULL REFERENCES models(name),
  alias TEXT NOT NULL,
  checkpoint_id TEXT NOT NULL REFERENCES checkpoints(id),
  PRIMARY KEY(model, alias));
CREATE TABLE alias_history(
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  model TEXT NOT NULL,
  alias TEXT NOT NULL,
  checkpoint_id TEXT NOT NULL,
  previous_id TEXT NOT NULL,
  reason TEXT NOT NULL,
  time_us INTEGER NOT NULL);
)sql"},
      {2, R"sql(
ALTER TABLE alias_history ADD COLUMN user TEXT NOT NULL DEFAULT '';
ALTER TABLE alias_history ADD COLUMN host TEXT NOT NULL DEFAULT '';
)sql"},
      {3, R"sql(
CREATE INDEX checkpoints_by_model_time ON checkpoints(model, created_us);
CREATE INDEX checkpoints_by_time ON checkpoints(created_us);
CREATE INDEX checkpoints_by_dataset ON checkpoints(dataset_id);
CREATE INDEX checkpoints_by_parent ON checkpoints(parent_id);
CREATE INDEX checkpoint_blobs_by_sha ON checkpoint_blobs(sha256);
CREATE INDEX datasets_by_time ON datasets(created_us);
CREATE INDEX datasets_by_blob ON datasets(blob_sha256);
CREATE INDEX dataset_parents_by_parent ON dataset_parents(parent_id);
CREATE INDEX aliases_by_checkpoint ON aliases(checkpoint_id);
CREATE INDEX alias_history_by_alias ON alias_history(model, alias);
)sql"},
      // Fewer pages written per registration: the dataset and parent indexes hold only the
      // checkpoints that have one (every lookup names one), and the alias history numbers its
      // rows without AUTOINCREMENT, which wrote sqlite_sequence on every alias move (rows are
      // never deleted, so the numbers still only grow).
      {4, R"sql(
DROP INDEX checkpoints_by_dataset;
DROP INDEX checkpoints_by_parent;
CREATE INDEX checkpoints_by_dataset ON checkpoints(dataset_id) WHERE dataset_id IS NOT NULL;
CREATE INDEX checkpoints_by_parent ON checkpoints(parent_id) WHERE parent_id IS NOT NULL;
CREATE TABLE alias_history_numbered(
  seq INTEGER PRIMARY KEY,
  model TEXT NOT NULL,
  alias TEXT NOT NULL,
  checkpoint_id TEXT NOT NULL,
  previous_id TEXT NOT NULL,
  reason TEXT NOT NULL,
  time_us INTEGER NOT NULL,
  user TEXT NOT NULL DEFAULT '',
  host TEXT NOT NULL DEFAULT '');
INSERT INTO alias_history_numbered(seq, model, alias, checkpoint_id, previous_id, reason, time_us,
                                   user, host)
  SELECT seq, model, alias, checkpoint_id, previous_id, reason, time_us, user, host
  FROM alias_history;
DROP TABLE alias_history;
ALTER TABLE alias_history_numbered RENAME TO alias_history;
CREATE INDEX alias_history_by_alias ON alias_history(model, alias);
)sql"},
      // Who stored each blob, for per-caller storage quotas (issue 25, req 6): one row per blob,
      // its first uploader's; blobs stored before this step count for nobody.
      {5, R"sql(
CREATE TABLE blob_uploads(
  sha256 TEXT PRIMARY KEY,
  caller TEXT NOT NULL,
  size INTEGER NOT NULL,
  time_us INTEGER NOT NULL);
CREATE INDEX blob_uploads_by_caller ON blob_uploads(caller);
)sql"},
  };
  return kMigrations;
}

}  // namespace

int LatestCatalogSchemaVersion() { return Migrations().back().version; }

absl::StatusOr<int> ReadCatalogSchemaVersion(SqliteDb& db) {
  ROBOLOOP_ASSIGN_OR_RETURN(
      int64_t has_table,
      db.QueryInt("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = "
                  "'schema_version'",
                  {}, 0));
  if (has_table == 0) return 0;
  ROBOLOOP_ASSIGN_OR_RETURN(int64_t version,
                            db.QueryInt("SELECT MAX(version) FROM schema_version", {}, 0));
  return static_cast<int>(version);
}

absl::Status MigrateCatalog(SqliteDb& db) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<SqliteTransaction> transaction,
                            SqliteTransaction::Begin(&db));
  ROBOLOOP_RETURN_IF_ERROR(
      db.Exec("CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL)"));
  ROBOLOOP_ASSIGN_OR_RETURN(int current, ReadCatalogSchemaVersion(db));
  if (current > LatestCatalogSchemaVersion()) {
    return absl::FailedPreconditionError(
        absl::StrCat("catalog schema version ", current, " is newer than this build's ",
                     LatestCatalogSchemaVersion(), "; upgrade roboloop"));
  }
  for (const Migration& migration : Migrations()) {
    if (migration.version <= current) continue;
    ROBOLOOP_RETURN_IF_ERROR(Annotate(db.Exec(migration.sql),
                                      absl::StrCat("migrating to schema ", migration.version)));
  }
  if (current < LatestCatalogSchemaVersion()) {
    ROBOLOOP_RETURN_IF_ERROR(db.Exec("DELETE FROM schema_version"));
    ROBOLOOP_RETURN_IF_ERROR(db.Run("INSERT INTO schema_version(version) VALUES(?1)",
                                    {int64_t{LatestCatalogSchemaVersion()}}));
  }
  return transaction->Commit();
}

}  // namespace roboloop::registry
