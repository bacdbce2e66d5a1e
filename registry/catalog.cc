#include "registry/catalog.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/ids.h"
#include "common/status.h"
#include "registry/catalog_schema.h"
#include "common/sqlite.h"

namespace roboloop::registry {
namespace {

constexpr int kMaxLineageDepth = 100000;

constexpr char kCheckpointColumns[] =
    "c.id, c.model, c.version, c.step, c.run_id, c.dataset_id, c.parent_id, c.config_json, "
    "c.metrics_json, c.created_us, c.manifest_json";

constexpr char kDatasetColumns[] =
    "d.id, d.name, d.version, d.blob_sha256, d.blob_size, d.metadata_json, d.created_us";

SqlValue TextOrNull(const std::string& text) {
  if (text.empty()) return nullptr;
  return text;
}

v1::Checkpoint CheckpointFromRow(const SqliteStatement& row) {
  v1::Checkpoint checkpoint;
  checkpoint.set_id(row.Text(0));
  checkpoint.set_model(row.Text(1));
  checkpoint.set_version(static_cast<int32_t>(row.Int(2)));
  checkpoint.set_step(row.Int(3));
  checkpoint.set_run_id(row.Text(4));
  checkpoint.set_dataset_id(row.Text(5));
  checkpoint.set_parent_id(row.Text(6));
  checkpoint.set_config_json(row.Text(7));
  checkpoint.set_metrics_json(row.Text(8));
  checkpoint.set_created_unix_us(row.Int(9));
  checkpoint.set_manifest_json(row.Text(10));
  return checkpoint;
}

v1::Dataset DatasetFromRow(const SqliteStatement& row) {
  v1::Dataset dataset;
  dataset.set_id(row.Text(0));
  dataset.set_name(row.Text(1));
  dataset.set_version(static_cast<int32_t>(row.Int(2)));
  dataset.mutable_blob()->set_role("data");
  dataset.mutable_blob()->set_sha256(row.Text(3));
  dataset.mutable_blob()->set_size(row.Int(4));
  dataset.set_metadata_json(row.Text(5));
  dataset.set_created_unix_us(row.Int(6));
  return dataset;
}

v1::AliasEvent AliasEventFromRow(const SqliteStatement& row) {
  v1::AliasEvent event;
  event.set_model(row.Text(0));
  event.set_alias(row.Text(1));
  event.set_checkpoint_id(row.Text(2));
  event.set_previous_id(row.Text(3));
  event.set_reason(row.Text(4));
  event.set_user(row.Text(5));
  event.set_host(row.Text(6));
  event.set_time_unix_us(row.Int(7));
  return event;
}

// Runs `sql` and collects the text of column 0 of every row.
absl::StatusOr<std::vector<std::string>> Strings(SqliteDb& db, const std::string& sql,
                                                 const std::vector<SqlValue>& params) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<SqliteStatement> statement, db.Prepare(sql, params));
  std::vector<std::string> values;
  while (true) {
    ROBOLOOP_ASSIGN_OR_RETURN(bool row, statement->Step());
    if (!row) return values;
    values.push_back(statement->Text(0));
  }
}

absl::StatusOr<std::optional<std::string>> OptionalString(SqliteDb& db, const std::string& sql,
                                                          const std::vector<SqlValue>& params) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::string> values, Strings(db, sql, params));
  if (values.empty()) return std::nullopt;
  return values.front();
}

absl::Status FillCheckpointDetails(SqliteDb& db, v1::Checkpoint* checkpoint) {
  ROBOLOOP_ASSIGN_OR_RETURN(
      std::unique_ptr<SqliteStatement> blobs,
      db.Prepare("SELECT role, sha256, size FROM checkpoint_blobs WHERE checkpoint_id = ?1 "
                 "ORDER BY role",
                 {checkpoint->id()}));
  while (true) {
    ROBOLOOP_ASSIGN_OR_RETURN(bool row, blobs->Step());
    if (!row) break;
    v1::BlobRef* blob = checkpoint->add_blobs();
    blob->set_role(blobs->Text(0));
    blob->set_sha256(blobs->Text(1));
    blob->set_size(blobs->Int(2));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(
      std::vector<std::string> aliases,
      Strings(db, "SELECT alias FROM aliases WHERE checkpoint_id = ?1 ORDER BY alias",
              {checkpoint->id()}));
  for (std::string& alias : aliases) checkpoint->add_aliases(std::move(alias));
  return absl::OkStatus();
}

// Adds a dataset's parents, read from dataset_parents, to `dataset`.
absl::Status FillDatasetParents(SqliteDb& db, v1::Dataset* dataset) {
  ROBOLOOP_ASSIGN_OR_RETURN(
      std::vector<std::string> parents,
      Strings(db, "SELECT parent_id FROM dataset_parents WHERE dataset_id = ?1 ORDER BY parent_id",
              {dataset->id()}));
  for (std::string& parent : parents) dataset->add_parent_ids(std::move(parent));
  return absl::OkStatus();
}

// Runs a query whose rows `from_row` reads into records, then completes each record with
// `fill_details` (its rows of other tables), all from one snapshot.
template <typename Record>
absl::StatusOr<std::vector<Record>> QueryRecords(SqliteDb& db, const std::string& sql,
                                                 const std::vector<SqlValue>& params,
                                                 Record (*from_row)(const SqliteStatement&),
                                                 absl::Status (*fill_details)(SqliteDb&, Record*)) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<SqliteReadSnapshot> snapshot, SqliteReadSnapshot::Begin(&db));
  std::vector<Record> records;
  {
    ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<SqliteStatement> statement, db.Prepare(sql, params));
    while (true) {
      ROBOLOOP_ASSIGN_OR_RETURN(bool row, statement->Step());
      if (!row) break;
      records.push_back(from_row(*statement));
    }
  }
  for (Record& record : records) {
    ROBOLOOP_RETURN_IF_ERROR(fill_details(db, &record));
  }
  return records;
}

// Runs a query selecting kCheckpointColumns and returns the complete checkpoints.
absl::StatusOr<std::vector<v1::Checkpoint>> QueryCheckpoints(SqliteDb& db, const std::string& sql,
                                                             const std::vector<SqlValue>& params) {
  return QueryRecords<v1::Checkpoint>(db, sql, params, CheckpointFromRow, FillCheckpointDetails);
}

// Runs a query selecting kDatasetColumns and returns the complete datasets.
absl::StatusOr<std::vector<v1::Dataset>> QueryDatasets(SqliteDb& db, const std::string& sql,
                                                       const std::vector<SqlValue>& params) {
  return QueryRecords<v1::Dataset>(db, sql, params, DatasetFromRow, FillDatasetParents);
}

// The datasets linked to `dataset_id` through dataset_parents, towards its parents or its
// children, each once at its nearest depth, nearest first; `dataset_id` itself first when
// `with_self`.
absl::StatusOr<std::vector<v1::Dataset>> LinkedDatasets(SqliteDb& db, const std::string& dataset_id,
                                                        bool towards_parents, bool with_self) {
  const char* from = towards_parents ? "dataset_id" : "parent_id";
  const char* to = towards_parents ? "parent_id" : "dataset_id";
  return QueryDatasets(
      db,
      absl::StrCat("WITH RECURSIVE walk(id, depth) AS (SELECT ?1, 0"
                   " UNION SELECT l.", to, ", walk.depth + 1 FROM dataset_parents l"
                   " JOIN walk ON l.", from, " = walk.id WHERE walk.depth < ?2),"
                   " nearest(id, depth) AS (SELECT id, MIN(depth) FROM walk GROUP BY id)"
                   " SELECT ", kDatasetColumns,
                   " FROM nearest JOIN datasets d ON d.id = nearest.id WHERE nearest.depth >= ?3"
                   " ORDER BY nearest.depth, d.created_us, d.rowid"),
      {dataset_id, int64_t{kMaxLineageDepth}, int64_t{with_self ? 0 : 1}});
}

absl::StatusOr<std::optional<v1::Checkpoint>> FindCheckpoint(SqliteDb& db, const std::string& id) {
  ROBOLOOP_ASSIGN_OR_RETURN(
      std::vector<v1::Checkpoint> found,
      QueryCheckpoints(db, absl::StrCat("SELECT ", kCheckpointColumns,
                                        " FROM checkpoints c WHERE c.id = ?1"),
                       {id}));
  if (found.empty()) return std::nullopt;
  return std::move(found.front());
}

absl::StatusOr<std::optional<v1::Dataset>> FindDataset(SqliteDb& db, const std::string& id) {
  ROBOLOOP_ASSIGN_OR_RETURN(
      std::vector<v1::Dataset> found,
      QueryDatasets(db, absl::StrCat("SELECT ", kDatasetColumns, " FROM datasets d WHERE d.id = ?1"),
                    {id}));
  if (found.empty()) return std::nullopt;
  return std::move(found.front());
}

absl::StatusOr<v1::AliasEvent> MoveAliasInTransaction(SqliteDb& db, const std::string& model,
                                                      const std::string& alias,
                                                      const std::string& checkpoint_id,
                                                      const std::string& reason,
                                                      const Actor& actor) {
  ROBOLOOP_ASSIGN_OR_RETURN(
      std::optional<std::string> previous,
      OptionalString(db, "SELECT checkpoint_id FROM aliases WHERE model = ?1 AND alias = ?2",
                     {model, alias}));
  ROBOLOOP_RETURN_IF_ERROR(db.Run(
      "INSERT INTO aliases(model, alias, checkpoint_id) VALUES(?1, ?2, ?3) "
      "ON CONFLICT(model, alias) DO UPDATE SET checkpoint_id = excluded.checkpoint_id",
      {model, alias, checkpoint_id}));
  v1::AliasEvent event;
  event.set_model(model);
  event.set_alias(alias);
  event.set_checkpoint_id(checkpoint_id);
  event.set_previous_id(previous.value_or(""));
  event.set_reason(reason);
  event.set_user(actor.user);
  event.set_host(actor.host);
  event.set_time_unix_us(NowUnixMicros());
  ROBOLOOP_RETURN_IF_ERROR(db.Run(
      "INSERT INTO alias_history(model, alias, checkpoint_id, previous_id, reason, user, host, "
      "time_us) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
      {model, alias, checkpoint_id, event.previous_id(), reason, actor.user, actor.host,
       event.time_unix_us()}));
  return event;
}

// What FindCheckpoint returns for a checkpoint inserted just now: the record's fields, its
// version and time, its blobs in role order and the one alias it has, `latest`.
v1::Checkpoint InsertedCheckpoint(const CheckpointRecord& record, int64_t version, int64_t created_us) {
  v1::Checkpoint checkpoint;
  checkpoint.set_id(record.id);
  checkpoint.set_model(record.model);
  checkpoint.set_version(static_cast<int32_t>(version));
  checkpoint.set_step(record.step);
  checkpoint.set_run_id(record.run_id);
  checkpoint.set_dataset_id(record.dataset_id);
  checkpoint.set_parent_id(record.parent_id);
  checkpoint.set_config_json(record.config_json);
  checkpoint.set_metrics_json(record.metrics_json);
  checkpoint.set_created_unix_us(created_us);
  checkpoint.set_manifest_json(record.manifest_json);
  std::vector<v1::BlobRef> blobs = record.blobs;
  std::stable_sort(blobs.begin(), blobs.end(),
                   [](const v1::BlobRef& a, const v1::BlobRef& b) { return a.role() < b.role(); });
  for (v1::BlobRef& blob : blobs) *checkpoint.add_blobs() = std::move(blob);
  checkpoint.add_aliases("latest");
  return checkpoint;
}

// Inserts the rows of one checkpoint with the next version of its model and moves `latest`.
absl::StatusOr<Inserted<v1::Checkpoint>> InsertCheckpointRows(SqliteDb& db,
                                                              const CheckpointRecord& record,
                                                              const Actor& actor) {
  ROBOLOOP_ASSIGN_OR_RETURN(
      int64_t known, db.QueryInt("SELECT COUNT(*) FROM checkpoints WHERE id = ?1", {record.id}, 0));
  if (known > 0) {
    ROBOLOOP_ASSIGN_OR_RETURN(std::optional<v1::Checkpoint> existing, FindCheckpoint(db, record.id));
    return Inserted<v1::Checkpoint>{*std::move(existing), false};
  }
  int64_t now = NowUnixMicros();
  ROBOLOOP_RETURN_IF_ERROR(db.Run(
      "INSERT OR IGNORE INTO models(name, created_us) VALUES(?1, ?2)", {record.model, now}));
  ROBOLOOP_ASSIGN_OR_RETURN(
      int64_t version,
      db.QueryInt("SELECT MAX(version) FROM checkpoints WHERE model = ?1", {record.model}, 0));
  ++version;
  ROBOLOOP_RETURN_IF_ERROR(db.Run(
      "INSERT INTO checkpoints(id, model, version, step, run_id, dataset_id, parent_id, "
      "config_json, metrics_json, created_us, manifest_json) "
      "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
      {record.id, record.model, version, record.step, record.run_id, TextOrNull(record.dataset_id),
       TextOrNull(record.parent_id), record.config_json, record.metrics_json, now,
       record.manifest_json}));
  for (const v1::BlobRef& blob : record.blobs) {
    ROBOLOOP_RETURN_IF_ERROR(db.Run(
        "INSERT INTO checkpoint_blobs(checkpoint_id, role, sha256, size) VALUES(?1, ?2, ?3, ?4)",
        {record.id, blob.role(), blob.sha256(), blob.size()}));
  }
  ROBOLOOP_RETURN_IF_ERROR(MoveAliasInTransaction(db, record.model, "latest", record.id,
                                                  absl::StrCat("registered version ", version),
                                                  actor)
                               .status());
  return Inserted<v1::Checkpoint>{InsertedCheckpoint(record, version, now), true};
}

// Inserts one checkpoint inside the open transaction under a savepoint, so that its failure
// undoes only its own rows and leaves the others of a group commit in place.
absl::StatusOr<Inserted<v1::Checkpoint>> InsertCheckpointAlone(SqliteDb& db,
                                                               const CheckpointRecord& record,
                                                               const Actor& actor) {
  ROBOLOOP_RETURN_IF_ERROR(db.Exec("SAVEPOINT insert_checkpoint"));
  absl::StatusOr<Inserted<v1::Checkpoint>> inserted = InsertCheckpointRows(db, record, actor);
  if (!inserted.ok()) db.Exec("ROLLBACK TO insert_checkpoint").IgnoreError();
  absl::Status released = db.Exec("RELEASE insert_checkpoint");
  if (!released.ok()) return released;
  return inserted;
}

}  // namespace

Actor Actor::Local() { return Actor{CurrentUser(), HostName()}; }

Catalog::Catalog(std::unique_ptr<SqliteDb> writer, std::unique_ptr<SqliteDb> reader)
    : db_(std::move(writer)), reader_(std::move(reader)) {}

Catalog::~Catalog() = default;

int Catalog::LatestSchemaVersion() { return LatestCatalogSchemaVersion(); }

absl::StatusOr<std::unique_ptr<Catalog>> Catalog::Create(const Options& options) {
  if (options.path.empty()) return absl::InvalidArgumentError("catalog path is empty");
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db,
                            SqliteDb::Open(options.path, options.busy_timeout_ms));
  ROBOLOOP_RETURN_IF_ERROR(db->UseWriteAheadLog());
  ROBOLOOP_RETURN_IF_ERROR(
      db->Exec(options.durable_commits ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL"));
  ROBOLOOP_RETURN_IF_ERROR(db->Exec("PRAGMA foreign_keys = ON"));
  ROBOLOOP_RETURN_IF_ERROR(MigrateCatalog(*db));
  // A second connection for queries: in WAL mode it reads while the writer commits.
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> reader,
                            SqliteDb::Open(options.path, options.busy_timeout_ms));
  ROBOLOOP_RETURN_IF_ERROR(reader->Exec("PRAGMA foreign_keys = ON"));
  std::unique_ptr<Catalog> catalog(new Catalog(std::move(db), std::move(reader)));
  absl::MutexLock lock(&catalog->mu_);
  ROBOLOOP_RETURN_IF_ERROR(catalog->db_->CheckpointInBackground(&catalog->mu_));
  return catalog;
}

absl::StatusOr<int> Catalog::SchemaVersion() {
  absl::MutexLock lock(&read_mu_);
  return ReadCatalogSchemaVersion(*reader_);
}

absl::StatusOr<Inserted<v1::Checkpoint>> Catalog::InsertCheckpoint(const CheckpointRecord& record,
                                                                   const Actor& actor) {
  PendingCheckpoint mine{&record, &actor};
  std::vector<PendingCheckpoint*> batch;
  {
    absl::MutexLock lock(&queue_mu_);
    queue_.push_back(&mine);
    while (!mine.done && committing_) queue_done_.Wait(&queue_mu_);
    if (mine.done) return std::move(mine.result);
    committing_ = true;
    batch.swap(queue_);
  }
  CommitCheckpoints(batch);
  absl::MutexLock lock(&queue_mu_);
  for (PendingCheckpoint* pending : batch) pending->done = true;
  committing_ = false;
  queue_done_.SignalAll();
  return std::move(mine.result);
}

void Catalog::CommitCheckpoints(const std::vector<PendingCheckpoint*>& batch) {
  absl::MutexLock lock(&mu_);
  SqliteDb& db = *db_;
  absl::StatusOr<std::unique_ptr<SqliteTransaction>> transaction = SqliteTransaction::Begin(&db);
  for (PendingCheckpoint* pending : batch) {
    if (!transaction.ok()) {
      pending->result = transaction.status();
      continue;
    }
    pending->result = InsertCheckpointAlone(db, *pending->record, *pending->actor);
  }
  if (!transaction.ok()) return;
  absl::Status committed = (*transaction)->Commit();
  if (committed.ok()) return;
  for (PendingCheckpoint* pending : batch) pending->result = committed;
}

absl::StatusOr<Inserted<v1::Dataset>> Catalog::InsertDataset(const DatasetRecord& record) {
  absl::MutexLock lock(&mu_);
  SqliteDb& db = *db_;
  const std::string& id = record.blob.sha256();
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<SqliteTransaction> transaction,
                            SqliteTransaction::Begin(&db));
  ROBOLOOP_ASSIGN_OR_RETURN(std::optional<v1::Dataset> existing, FindDataset(db, id));
  if (existing && existing->name() == record.name) {
    return Inserted<v1::Dataset>{*std::move(existing), false};
  }
  if (existing) {
    return absl::AlreadyExistsError(absl::StrCat("this content is already registered as dataset ",
                                                 existing->name(), ":v", existing->version(),
                                                 " (id ", id, ")"));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(
      int64_t version,
      db.QueryInt("SELECT MAX(version) FROM datasets WHERE name = ?1", {record.name}, 0));
  ++version;
  ROBOLOOP_RETURN_IF_ERROR(db.Run(
      "INSERT INTO datasets(id, name, version, blob_sha256, blob_size, metadata_json, created_us) "
      "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
      {id, record.name, version, id, record.blob.size(), record.metadata_json, NowUnixMicros()}));
  for (const std::string& parent : record.parent_ids) {
    ROBOLOOP_RETURN_IF_ERROR(db.Run(
        "INSERT OR IGNORE INTO dataset_parents(dataset_id, parent_id) VALUES(?1, ?2)", {id, parent}));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(std::optional<v1::Dataset> stored, FindDataset(db, id));
  ROBOLOOP_RETURN_IF_ERROR(transaction->Commit());
  return Inserted<v1::Dataset>{*std::move(stored), true};
}

absl::StatusOr<v1::Checkpoint> Catalog::GetCheckpoint(const std::string& id) {
  absl::MutexLock lock(&read_mu_);
  ROBOLOOP_ASSIGN_OR_RETURN(std::optional<v1::Checkpoint> found, FindCheckpoint(*reader_, id));
  if (!found) return absl::NotFoundError(absl::StrCat("no checkpoint has id ", id));
  return *std::move(found);
}

absl::StatusOr<v1::Dataset> Catalog::GetDataset(const std::string& id) {
  absl::MutexLock lock(&read_mu_);
  ROBOLOOP_ASSIGN_OR_RETURN(std::optional<v1::Dataset> found, FindDataset(*reader_, id));
  if (!found) return absl::NotFoundError(absl::StrCat("no dataset has id ", id));
  return *std::move(found);
}

absl::StatusOr<std::optional<std::string>> Catalog::CheckpointIdByVersion(const std::string& model,
                                                                          int64_t version) {
  absl::MutexLock lock(&read_mu_);
  return OptionalString(*reader_, "SELECT id FROM checkpoints WHERE model = ?1 AND version = ?2",
                        {model, version});
}

absl::StatusOr<std::optional<std::string>> Catalog::CheckpointIdByAlias(const std::string& model,
                                                                        const std::string& alias) {
  absl::MutexLock lock(&read_mu_);
  return OptionalString(*reader_, "SELECT checkpoint_id FROM aliases WHERE model = ?1 AND alias = ?2",
                        {model, alias});
}

absl::StatusOr<std::optional<std::string>> Catalog::DatasetIdByVersion(const std::string& name,
                                                                       int64_t version) {
  absl::MutexLock lock(&read_mu_);
  if (version == 0) {
    return OptionalString(
        *reader_, "SELECT id FROM datasets WHERE name = ?1 ORDER BY version DESC LIMIT 1", {name});
  }
  return OptionalString(*reader_, "SELECT id FROM datasets WHERE name = ?1 AND version = ?2",
                        {name, version});
}

absl::StatusOr<std::vector<std::string>> Catalog::CheckpointIdsWithPrefix(const std::string& prefix,
                                                                          int limit) {
  absl::MutexLock lock(&read_mu_);
  return Strings(*reader_,
                 "SELECT id FROM checkpoints WHERE substr(id, 1, length(?1)) = ?1 ORDER BY id "
                 "LIMIT ?2",
                 {prefix, int64_t{limit}});
}

absl::StatusOr<std::vector<std::string>> Catalog::DatasetIdsWithPrefix(const std::string& prefix,
                                                                       int limit) {
  absl::MutexLock lock(&read_mu_);
  return Strings(*reader_,
                 "SELECT id FROM datasets WHERE substr(id, 1, length(?1)) = ?1 ORDER BY id "
                 "LIMIT ?2",
                 {prefix, int64_t{limit}});
}

absl::StatusOr<std::vector<std::string>> Catalog::ModelNames() {
  absl::MutexLock lock(&read_mu_);
  return Strings(*reader_, "SELECT name FROM models ORDER BY name", {});
}

absl::StatusOr<std::vector<std::string>> Catalog::DatasetNames() {
  absl::MutexLock lock(&read_mu_);
  return Strings(*reader_, "SELECT DISTINCT name FROM datasets ORDER BY name", {});
}

absl::StatusOr<std::vector<std::string>> Catalog::AliasNames(const std::string& model) {
  absl::MutexLock lock(&read_mu_);
  return Strings(*reader_, "SELECT alias FROM aliases WHERE model = ?1 ORDER BY alias", {model});
}

absl::StatusOr<int64_t> Catalog::MaxCheckpointVersion(const std::string& model) {
  absl::MutexLock lock(&read_mu_);
  return reader_->QueryInt("SELECT MAX(version) FROM checkpoints WHERE model = ?1", {model}, 0);
}

absl::StatusOr<int64_t> Catalog::MaxDatasetVersion(const std::string& name) {
  absl::MutexLock lock(&read_mu_);
  return reader_->QueryInt("SELECT MAX(version) FROM datasets WHERE name = ?1", {name}, 0);
}

absl::StatusOr<std::vector<v1::Checkpoint>> Catalog::ListCheckpoints(
    const CheckpointFilter& filter) {
  std::string sql = absl::StrCat("SELECT ", kCheckpointColumns, " FROM checkpoints c");
  std::vector<SqlValue> params;
  auto placeholder = [&params]() { return absl::StrCat("?", params.size()); };
  if (!filter.alias.empty()) {
    params.emplace_back(filter.alias);
    absl::StrAppend(&sql, " JOIN aliases a ON a.checkpoint_id = c.id AND a.alias = ", placeholder());
  }
  params.emplace_back(filter.created_after_unix_us);
  absl::StrAppend(&sql, " WHERE c.created_us > ", placeholder());
  if (!filter.model.empty()) {
    params.emplace_back(filter.model);
    absl::StrAppend(&sql, " AND c.model = ", placeholder());
  }
  if (!filter.dataset_id.empty()) {
    params.emplace_back(filter.dataset_id);
    absl::StrAppend(&sql, " AND c.dataset_id = ", placeholder());
  }
  const char* direction = filter.newest_first ? "DESC" : "ASC";
  params.emplace_back(int64_t{filter.limit});
  absl::StrAppend(&sql, " ORDER BY c.created_us ", direction, ", c.rowid ", direction, " LIMIT ",
                  placeholder());
  absl::MutexLock lock(&read_mu_);
  return QueryCheckpoints(*reader_, sql, params);
}

absl::StatusOr<std::vector<v1::Dataset>> Catalog::ListDatasets(const DatasetFilter& filter) {
  std::string sql = absl::StrCat("SELECT ", kDatasetColumns, " FROM datasets d WHERE d.created_us > ?1");
  std::vector<SqlValue> params = {filter.created_after_unix_us};
  if (!filter.name.empty()) {
    params.push_back(filter.name);
    absl::StrAppend(&sql, " AND d.name = ?", params.size());
  }
  const char* direction = filter.newest_first ? "DESC" : "ASC";
  params.push_back(int64_t{filter.limit});
  absl::StrAppend(&sql, " ORDER BY d.created_us ", direction, ", d.rowid ", direction, " LIMIT ?",
                  params.size());
  absl::MutexLock lock(&read_mu_);
  return QueryDatasets(*reader_, sql, params);
}

absl::StatusOr<v1::AliasEvent> Catalog::MoveAlias(const std::string& model,
                                                  const std::string& alias,
                                                  const std::string& checkpoint_id,
                                                  const std::string& reason, const Actor& actor) {
  absl::MutexLock lock(&mu_);
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<SqliteTransaction> transaction,
                            SqliteTransaction::Begin(db_.get()));
  ROBOLOOP_ASSIGN_OR_RETURN(v1::AliasEvent event, MoveAliasInTransaction(*db_, model, alias,
                                                                         checkpoint_id, reason, actor));
  ROBOLOOP_RETURN_IF_ERROR(transaction->Commit());
  return event;
}

absl::StatusOr<std::vector<v1::AliasEvent>> Catalog::AliasHistory(const std::string& model,
                                                                  const std::string& alias) {
  absl::MutexLock lock(&read_mu_);
  ROBOLOOP_ASSIGN_OR_RETURN(
      std::unique_ptr<SqliteStatement> statement,
      reader_->Prepare("SELECT model, alias, checkpoint_id, previous_id, reason, user, host, time_us "
                   "FROM alias_history WHERE model = ?1 AND (?2 = '' OR alias = ?2) ORDER BY seq",
                   {model, alias}));
  std::vector<v1::AliasEvent> events;
  while (true) {
    ROBOLOOP_ASSIGN_OR_RETURN(bool row, statement->Step());
    if (!row) return events;
    events.push_back(AliasEventFromRow(*statement));
  }
}

absl::StatusOr<std::vector<v1::Checkpoint>> Catalog::Ancestors(const std::string& id) {
  absl::MutexLock lock(&read_mu_);
  return QueryCheckpoints(
      *reader_,
      absl::StrCat("WITH RECURSIVE chain(id, depth) AS ("
                   " SELECT parent_id, 1 FROM checkpoints WHERE id = ?1 AND parent_id IS NOT NULL"
                   " UNION ALL SELECT p.parent_id, chain.depth + 1 FROM checkpoints p"
                   " JOIN chain ON p.id = chain.id"
                   " WHERE p.parent_id IS NOT NULL AND chain.depth < ?2)"
                   " SELECT ", kCheckpointColumns,
                   " FROM chain JOIN checkpoints c ON c.id = chain.id ORDER BY chain.depth"),
      {id, int64_t{kMaxLineageDepth}});
}

absl::StatusOr<std::vector<v1::Checkpoint>> Catalog::Descendants(const std::string& id) {
  absl::MutexLock lock(&read_mu_);
  return QueryCheckpoints(
      *reader_,
      absl::StrCat("WITH RECURSIVE tree(id, depth) AS ("
                   " SELECT id, 1 FROM checkpoints WHERE parent_id = ?1"
                   " UNION SELECT k.id, tree.depth + 1 FROM checkpoints k"
                   " JOIN tree ON k.parent_id = tree.id WHERE tree.depth < ?2),"
                   " nearest(id, depth) AS (SELECT id, MIN(depth) FROM tree GROUP BY id)"
                   " SELECT ", kCheckpointColumns,
                   " FROM nearest JOIN checkpoints c ON c.id = nearest.id"
                   " ORDER BY nearest.depth, c.created_us, c.rowid"),
      {id, int64_t{kMaxLineageDepth}});
}

absl::StatusOr<std::vector<v1::Checkpoint>> Catalog::CheckpointsTrainedOn(
    const std::string& dataset_id) {
  absl::MutexLock lock(&read_mu_);
  return QueryCheckpoints(*reader_,
                          absl::StrCat("SELECT ", kCheckpointColumns,
                                       " FROM checkpoints c WHERE c.dataset_id = ?1"
                                       " ORDER BY c.created_us, c.rowid"),
                          {dataset_id});
}

absl::StatusOr<std::vector<v1::Dataset>> Catalog::DatasetAncestry(const std::string& dataset_id) {
  absl::MutexLock lock(&read_mu_);
  return LinkedDatasets(*reader_, dataset_id, /*towards_parents=*/true, /*with_self=*/true);
}

absl::StatusOr<std::vector<v1::Dataset>> Catalog::DerivedDatasets(const std::string& dataset_id) {
  absl::MutexLock lock(&read_mu_);
  return LinkedDatasets(*reader_, dataset_id, /*towards_parents=*/false, /*with_self=*/false);
}

absl::StatusOr<std::vector<v1::BlobRef>> Catalog::ReferencedBlobs() {
  absl::MutexLock lock(&read_mu_);
  ROBOLOOP_ASSIGN_OR_RETURN(
      std::unique_ptr<SqliteStatement> statement,
      reader_->Prepare("SELECT sha256, MAX(size) FROM ("
                   " SELECT sha256, size FROM checkpoint_blobs"
                   " UNION ALL SELECT blob_sha256, blob_size FROM datasets)"
                   " GROUP BY sha256 ORDER BY sha256"));
  std::vector<v1::BlobRef> blobs;
  while (true) {
    ROBOLOOP_ASSIGN_OR_RETURN(bool row, statement->Step());
    if (!row) return blobs;
    v1::BlobRef blob;
    blob.set_sha256(statement->Text(0));
    blob.set_size(statement->Int(1));
    blobs.push_back(std::move(blob));
  }
}

absl::StatusOr<bool> Catalog::IsBlobReferenced(const std::string& sha256) {
  absl::MutexLock lock(&read_mu_);
  ROBOLOOP_ASSIGN_OR_RETURN(
      int64_t count,
      reader_->QueryInt("SELECT (SELECT COUNT(*) FROM checkpoint_blobs WHERE sha256 = ?1) +"
                    " (SELECT COUNT(*) FROM datasets WHERE blob_sha256 = ?1)",
                    {sha256}, 0));
  return count > 0;
}

absl::Status Catalog::RecordBlobUpload(const std::string& sha256, const std::string& caller,
                                       int64_t size) {
  absl::MutexLock lock(&mu_);
  return db_->Run("INSERT OR IGNORE INTO blob_uploads(sha256, caller, size, time_us) VALUES(?1, ?2, ?3, ?4)",
                  {sha256, caller, size, NowUnixMicros()});
}

absl::StatusOr<int64_t> Catalog::BytesUploadedBy(const std::string& caller) {
  absl::MutexLock lock(&read_mu_);
  return reader_->QueryInt("SELECT COALESCE(SUM(size), 0) FROM blob_uploads WHERE caller = ?1", {caller}, 0);
}

absl::Status Catalog::ForgetBlobUpload(const std::string& sha256) {
  absl::MutexLock lock(&mu_);
  return db_->Run("DELETE FROM blob_uploads WHERE sha256 = ?1", {sha256});
}

absl::StatusOr<std::vector<std::string>> Catalog::AllCheckpointIds() {
  absl::MutexLock lock(&read_mu_);
  return Strings(*reader_, "SELECT id FROM checkpoints ORDER BY rowid", {});
}

absl::StatusOr<std::vector<std::string>> Catalog::AllDatasetIds() {
  absl::MutexLock lock(&read_mu_);
  return Strings(*reader_, "SELECT id FROM datasets ORDER BY rowid", {});
}

}  // namespace roboloop::registry
