// The registry's SQLite catalog: models, checkpoints and their blobs, datasets and their
// parents, aliases and their history. WAL journal, busy timeout, foreign keys on, and a
// schema_version table with ordered migrations applied at open.
//
// Thread-safety: every method may be called from any thread. Writes go through one connection
// (one mutex), queries through a second (its own mutex), so a query does not wait for a
// commit in progress: WAL lets it read the last committed state. Several processes may open the same file: writes run in BEGIN IMMEDIATE
// transactions, so per-model version numbers never repeat or skip.
//
// The catalog trusts its callers' input (Registry validates names, ids and JSON at the
// boundary); it enforces only uniqueness and referential integrity.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "roboloop/v1/registry.pb.h"

namespace roboloop {
class SqliteDb;
}  // namespace roboloop

namespace roboloop::registry {

// Who moved an alias, as recorded in its history.
struct Actor {
  std::string user;  // login name
  std::string host;  // host name (or a client's peer address)
  // The calling process's user and host.
  static Actor Local();
};

// A checkpoint to insert; the caller has validated every field.
struct CheckpointRecord {
  std::string id;                  // sha256 of the canonical manifest
  std::string model;               // model name
  int64_t step = 0;                // training step
  std::string run_id;              // producing run ("" when none)
  std::string dataset_id;          // training dataset ("" when none; must exist otherwise)
  std::string parent_id;           // parent checkpoint ("" when none; must exist otherwise)
  std::string config_json;         // training configuration
  std::string metrics_json;        // metrics object
  std::string manifest_json;       // canonical manifest
  std::vector<v1::BlobRef> blobs;  // role, sha256, size
};

// A dataset to insert; id is the sha256 of its blob.
struct DatasetRecord {
  std::string name;                     // dataset name
  v1::BlobRef blob;                     // content blob (role "data")
  std::string metadata_json;            // metadata object
  std::vector<std::string> parent_ids;  // existing parent datasets
};

// Filters for ListCheckpoints; empty strings and zeros match everything.
struct CheckpointFilter {
  std::string model;                  // only this model
  std::string dataset_id;             // only checkpoints trained on this dataset
  std::string alias;                  // only checkpoints this alias points at
  int64_t created_after_unix_us = 0;  // only checkpoints created strictly later
  int limit = 100;                    // at most this many rows
  bool newest_first = true;           // order by creation time, newest first
};

// Filters for ListDatasets; empty strings and zeros match everything.
struct DatasetFilter {
  std::string name;                   // only this dataset name
  int64_t created_after_unix_us = 0;  // only datasets created strictly later
  int limit = 100;                    // at most this many rows
  bool newest_first = true;           // order by creation time, newest first
};

// An inserted (or already present) row and whether this call created it.
template <typename T>
struct Inserted {
  T value;       // the stored row
  bool created;  // false when an identical row already existed
};

class Catalog {
 public:
  struct Options {
    std::string path;             // SQLite database file (created when missing)
    int busy_timeout_ms = 30000;  // how long to wait for another connection's write lock
    bool durable_commits = true;  // synchronous=FULL: commits survive power loss, not only crashes
  };

  // Opens the catalog and migrates it to the latest schema. FailedPrecondition when the file
  // was written by a newer schema than this build knows.
  static absl::StatusOr<std::unique_ptr<Catalog>> Create(const Options& options);
  ~Catalog();

  // The schema version this build migrates to.
  static int LatestSchemaVersion();
  // The schema version recorded in the database.
  absl::StatusOr<int> SchemaVersion();

  // Inserts a checkpoint with the next version of its model and moves `latest` to it. When a
  // checkpoint with the same id exists, returns it unchanged (created = false). Concurrent calls
  // are committed together (group commit: one transaction and one log sync for all of them,
  // each under its own savepoint, so one caller's error does not fail the others); each returns
  // once its checkpoint is durable.
  absl::StatusOr<Inserted<v1::Checkpoint>> InsertCheckpoint(const CheckpointRecord& record,
                                                            const Actor& actor);
  // Inserts a dataset with the next version of its name. The same content under the same name
  // returns the existing row; under another name AlreadyExists names the existing dataset.
  absl::StatusOr<Inserted<v1::Dataset>> InsertDataset(const DatasetRecord& record);

  // Returns a checkpoint by full id (with blobs and aliases); NotFound when absent.
  absl::StatusOr<v1::Checkpoint> GetCheckpoint(const std::string& id);
  // Returns a dataset by full id (with parents); NotFound when absent.
  absl::StatusOr<v1::Dataset> GetDataset(const std::string& id);

  // Id of `model`'s checkpoint number `version`, if any.
  absl::StatusOr<std::optional<std::string>> CheckpointIdByVersion(const std::string& model,
                                                                   int64_t version);
  // Id the alias `model@alias` points at, if any.
  absl::StatusOr<std::optional<std::string>> CheckpointIdByAlias(const std::string& model,
                                                                 const std::string& alias);
  // Id of dataset `name` version `version` (0 = its latest version), if any.
  absl::StatusOr<std::optional<std::string>> DatasetIdByVersion(const std::string& name,
                                                                 int64_t version);
  // Up to `limit` checkpoint ids starting with `prefix`, sorted.
  absl::StatusOr<std::vector<std::string>> CheckpointIdsWithPrefix(const std::string& prefix,
                                                                   int limit);
  // Up to `limit` dataset ids starting with `prefix`, sorted.
  absl::StatusOr<std::vector<std::string>> DatasetIdsWithPrefix(const std::string& prefix,
                                                                int limit);
  // All model names, sorted.
  absl::StatusOr<std::vector<std::string>> ModelNames();
  // All dataset names, sorted.
  absl::StatusOr<std::vector<std::string>> DatasetNames();
  // Aliases of `model`, sorted.
  absl::StatusOr<std::vector<std::string>> AliasNames(const std::string& model);
  // Highest version of `model` (0 when it has none).
  absl::StatusOr<int64_t> MaxCheckpointVersion(const std::string& model);
  // Highest version of dataset `name` (0 when it has none).
  absl::StatusOr<int64_t> MaxDatasetVersion(const std::string& name);

  // Checkpoints matching `filter`.
  absl::StatusOr<std::vector<v1::Checkpoint>> ListCheckpoints(const CheckpointFilter& filter);
  // Datasets matching `filter`.
  absl::StatusOr<std::vector<v1::Dataset>> ListDatasets(const DatasetFilter& filter);

  // Points `model@alias` at `checkpoint_id` and appends the move to the alias history.
  absl::StatusOr<v1::AliasEvent> MoveAlias(const std::string& model, const std::string& alias,
                                           const std::string& checkpoint_id,
                                           const std::string& reason, const Actor& actor);
  // Moves of `model`'s aliases (only `alias` unless empty), oldest first.
  absl::StatusOr<std::vector<v1::AliasEvent>> AliasHistory(const std::string& model,
                                                           const std::string& alias);

  // Parent, grandparent, ... of checkpoint `id`.
  absl::StatusOr<std::vector<v1::Checkpoint>> Ancestors(const std::string& id);
  // Children, grandchildren, ... of checkpoint `id`, nearest first.
  absl::StatusOr<std::vector<v1::Checkpoint>> Descendants(const std::string& id);
  // Checkpoints trained on dataset `dataset_id`, oldest first.
  absl::StatusOr<std::vector<v1::Checkpoint>> CheckpointsTrainedOn(const std::string& dataset_id);
  // Dataset `dataset_id` followed by its parents, grandparents, ... (each once).
  absl::StatusOr<std::vector<v1::Dataset>> DatasetAncestry(const std::string& dataset_id);
  // Datasets made from dataset `dataset_id` (its children), theirs, ... (each once, nearest first).
  absl::StatusOr<std::vector<v1::Dataset>> DerivedDatasets(const std::string& dataset_id);

  // Every blob some checkpoint or dataset references (one entry per sha256).
  absl::StatusOr<std::vector<v1::BlobRef>> ReferencedBlobs();
  // True when some checkpoint or dataset references blob `sha256`.
  absl::StatusOr<bool> IsBlobReferenced(const std::string& sha256);
  // Records that `caller` stored blob `sha256` of `size` bytes; a blob already recorded keeps its
  // first uploader (deduplicated content counts once, for whoever stored it first).
  absl::Status RecordBlobUpload(const std::string& sha256, const std::string& caller, int64_t size);
  // Bytes of the blobs recorded for `caller` (0 when none).
  absl::StatusOr<int64_t> BytesUploadedBy(const std::string& caller);
  // Drops the upload record of blob `sha256` (its blob was deleted); OK when there is none.
  absl::Status ForgetBlobUpload(const std::string& sha256);

  // Ids of all checkpoints, in insertion order.
  absl::StatusOr<std::vector<std::string>> AllCheckpointIds();
  // Ids of all datasets, in insertion order.
  absl::StatusOr<std::vector<std::string>> AllDatasetIds();

 private:
  // One caller of InsertCheckpoint waiting for its group commit.
  struct PendingCheckpoint {
    const CheckpointRecord* record;
    const Actor* actor;
    absl::StatusOr<Inserted<v1::Checkpoint>> result = absl::UnknownError("not committed");
    bool done = false;
  };

  Catalog(std::unique_ptr<SqliteDb> writer, std::unique_ptr<SqliteDb> reader);
  // Inserts `batch` in one transaction and fills in each result.
  void CommitCheckpoints(const std::vector<PendingCheckpoint*>& batch);

  absl::Mutex queue_mu_;
  absl::CondVar queue_done_;
  std::vector<PendingCheckpoint*> queue_ ABSL_GUARDED_BY(queue_mu_);  // awaiting a leader
  bool committing_ ABSL_GUARDED_BY(queue_mu_) = false;  // a leader is committing a batch

  absl::Mutex mu_;
  std::unique_ptr<SqliteDb> db_ ABSL_GUARDED_BY(mu_);  // writes (transactions)
  absl::Mutex read_mu_;
  std::unique_ptr<SqliteDb> reader_ ABSL_GUARDED_BY(read_mu_);  // queries
};

}  // namespace roboloop::registry
