// The leaderboard store (issue 7, req 3): every evaluation with its per-episode results in
// SQLite (WAL) at <root>/eval/leaderboard.db. The pair (protocol hash, checkpoint id) is the
// cache key; forced re-runs are new rows and every row is kept.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "roboloop/v1/eval.pb.h"

namespace roboloop {
class SqliteDb;
}  // namespace roboloop

namespace roboloop::eval {

// What a leaderboard ranks by, best first.
enum class RankMetric {
  kSuccessLower,  // Wilson lower bound of the success rate
  kSuccessRate,   // success rate
  kMeanReturn,    // mean return
};

// Parses "success_lower", "success_rate" or "mean_return"; InvalidArgument otherwise.
absl::StatusOr<RankMetric> ParseRankMetric(const std::string& name);

// Filters and ranking of Top. Empty strings and zero times match everything.
struct LeaderboardQuery {
  std::string task;              // the protocol's task
  std::string protocol_hash;     // one protocol
  std::string model;             // one registry model
  std::string dataset_id;        // checkpoints trained on this dataset
  std::string alias;             // checkpoints holding this alias when evaluated
  int64_t since_unix_us = 0;     // created at or after
  int64_t until_unix_us = 0;     // created before
  RankMetric metric = RankMetric::kSuccessLower;  // ranking
  int limit = 10;                // at most this many rows (>= 1)
};

// A protocol that stored evaluations ran under.
struct StoredProtocol {
  std::string hash;       // its protocol hash (64 lower-case hex)
  std::string name;       // its name (not part of the hash; the first stored one)
  v1::Protocol protocol;  // the first stored copy (task definition pinned, as evaluations store it)
};

// Thread-safe: all calls serialize on one connection. Several processes may share one
// database file (WAL, busy timeout).
class LeaderboardStore {
 public:
  // Options of the store.
  struct Options {
    std::string root;              // store root; the database is <root>/eval/leaderboard.db
    bool create_if_missing = true; // create the folder and database; else NotFound if absent
    int busy_timeout_ms = 5000;    // wait this long for another writer's lock
  };

  // Opens (and migrates) the database. InvalidArgument for an empty root, NotFound when
  // absent and not created, PermissionDenied/Internal naming the path when it cannot open.
  static absl::StatusOr<std::unique_ptr<LeaderboardStore>> Create(const Options& options);
  ~LeaderboardStore();

  // <root>/eval/leaderboard.db.
  static std::string DatabasePath(const std::string& root);

  // The schema version this build writes.
  static int LatestSchemaVersion();

  // Stores `evaluation` and its episodes in one transaction. Checked first (InvalidArgument):
  // id, checkpoint id and protocol task set; protocol_hash == ProtocolHash(protocol);
  // COMPLETED carries aggregates whose success counts match its episodes and the
  // protocol's episode count; FAILED carries no aggregates; no other status; every episode's
  // return is finite. A duplicate id
  // is AlreadyExists.
  absl::Status Store(const v1::Evaluation& evaluation);

  // The newest COMPLETED evaluation of `checkpoint_id` under `protocol_hash` (with
  // episodes), or nullopt.
  absl::StatusOr<std::optional<v1::Evaluation>> FindCached(const std::string& protocol_hash,
                                                           const std::string& checkpoint_id);

  // The best COMPLETED evaluations matching `query`, best first by its metric (ties: higher
  // success rate, higher mean return, newer). Only the newest evaluation of each
  // (protocol hash, checkpoint) competes. Without episodes.
  absl::StatusOr<std::vector<v1::Evaluation>> Top(const LeaderboardQuery& query);

  // Every COMPLETED evaluation of `model` (under `protocol_hash` unless empty), by model
  // version then creation time, forced re-runs included. Without episodes.
  absl::StatusOr<std::vector<v1::Evaluation>> History(const std::string& model,
                                                      const std::string& protocol_hash = "");

  // The distinct protocols of stored evaluations (any status), sorted by hash.
  absl::StatusOr<std::vector<StoredProtocol>> ListProtocols();

  // ListProtocols' protocols whose hash starts with `hash_prefix` or whose name is `name`; an
  // empty argument matches nothing. Sorted by hash.
  absl::StatusOr<std::vector<StoredProtocol>> FindProtocols(const std::string& hash_prefix,
                                                            const std::string& name);

  // The evaluation `id` with its episodes; NotFound naming the id.
  absl::StatusOr<v1::Evaluation> Get(const std::string& id);

  // Up to `limit` ids of stored evaluations (any status) that start with `prefix`, sorted.
  absl::StatusOr<std::vector<std::string>> EvaluationIdsWithPrefix(const std::string& prefix, int limit);

 private:
  explicit LeaderboardStore(std::unique_ptr<SqliteDb> db);

  absl::Mutex mu_;
  std::unique_ptr<SqliteDb> db_ ABSL_GUARDED_BY(mu_);
};

}  // namespace roboloop::eval
