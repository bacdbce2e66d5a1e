// A thin RAII layer over the SQLite C API with a statement cache, shared by the stores that use
// SQLite (registry catalog, leaderboard, pipeline runs).
// Not thread-safe: the owner serializes all use of one SqliteDb and its statements.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/sqlite_checkpointer.h"

namespace roboloop {

// A value bound to a statement parameter: NULL, an integer, a double or text.
using SqlValue = std::variant<std::nullptr_t, int64_t, double, std::string>;

class SqliteDb;

// A prepared statement borrowed from a SqliteDb's cache; reset and returned on destruction.
class SqliteStatement {
 public:
  ~SqliteStatement();
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;

  // Advances to the next row: true when a row is available, false when done.
  absl::StatusOr<bool> Step();
  // Runs the statement to completion, ignoring rows.
  absl::Status Run();
  // Column `i` of the current row as an integer (0 for NULL).
  int64_t Int(int i) const;
  // Column `i` of the current row as a double (0 for NULL).
  double Double(int i) const;
  // Column `i` of the current row as text ("" for NULL).
  std::string Text(int i) const;
  // True when column `i` of the current row is NULL.
  bool IsNull(int i) const;

 private:
  friend class SqliteDb;
  SqliteStatement(SqliteDb* db, std::string sql, sqlite3_stmt* stmt);

  SqliteDb* db_;
  std::string sql_;
  sqlite3_stmt* stmt_;
};

// One SQLite connection with a statement cache.
class SqliteDb {
 public:
  // Opens the database at `path` (creating it unless `create` is false) with the busy timeout.
  static absl::StatusOr<std::unique_ptr<SqliteDb>> Open(const std::string& path,
                                                        int busy_timeout_ms, bool create = true);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  // Runs one or more statements without parameters.
  absl::Status Exec(const std::string& sql);
  // Switches the database to write-ahead logging. Concurrent openers (several ranks creating one
  // catalog) can get SQLITE_BUSY here without the busy handler being consulted, so this retries
  // until the busy timeout has passed; a database already in WAL mode is left as it is.
  absl::Status UseWriteAheadLog();
  // Takes write-ahead-log checkpoints off this writer connection's commits (see WalCheckpointer).
  // `writers` is the mutex under which the owner commits on this connection; `frames` the log
  // size that starts a checkpoint (SQLite's auto-checkpoint default is 1000).
  absl::Status CheckpointInBackground(absl::Mutex* writers, int frames = 1000);
  // Background checkpoints completed so far (0 without CheckpointInBackground).
  int checkpoint_passes() const;
  // Prepares `sql` (cached) and binds `params` to ?1, ?2, ...
  absl::StatusOr<std::unique_ptr<SqliteStatement>> Prepare(const std::string& sql,
                                                           const std::vector<SqlValue>& params = {});
  // Runs `sql` with `params`, ignoring rows.
  absl::Status Run(const std::string& sql, const std::vector<SqlValue>& params = {});
  // Runs a query expected to return one integer (or no row: `fallback`).
  absl::StatusOr<int64_t> QueryInt(const std::string& sql, const std::vector<SqlValue>& params,
                                   int64_t fallback);
  // True while a transaction is open on this connection.
  bool InTransaction() const;
  // Converts the connection's last error (result code `rc`) into a Status naming the database
  // and `context`. A full disk (SQLITE_FULL, or an I/O error with errno ENOSPC) is
  // ResourceExhausted saying "no space left on device".
  absl::Status Error(int rc, const std::string& context) const;

 private:
  friend class SqliteStatement;
  SqliteDb(sqlite3* db, std::string path, int busy_timeout_ms);
  void Return(std::string sql, sqlite3_stmt* stmt);

  sqlite3* db_;
  std::string path_;
  int busy_timeout_ms_;
  std::map<std::string, sqlite3_stmt*> cache_;
  std::unique_ptr<WalCheckpointer> checkpointer_;
};

// Runs a BEGIN IMMEDIATE transaction; rolls back on destruction unless Commit() succeeded.
class SqliteTransaction {
 public:
  // Begins the transaction (waits for the write lock up to the busy timeout).
  static absl::StatusOr<std::unique_ptr<SqliteTransaction>> Begin(SqliteDb* db);
  ~SqliteTransaction();
  // Commits; after an error the destructor rolls back.
  absl::Status Commit();

 private:
  explicit SqliteTransaction(SqliteDb* db) : db_(db) {}
  SqliteDb* db_;
  bool done_ = false;
};

// A read transaction (BEGIN DEFERRED): every statement run until destruction reads one
// snapshot of the database, and the connection takes the write-ahead log's read lock once for
// all of them instead of once per statement. Ends (COMMIT, which writes nothing) on destruction.
// Inside a transaction already open on the connection it does nothing: that one is the snapshot.
class SqliteReadSnapshot {
 public:
  static absl::StatusOr<std::unique_ptr<SqliteReadSnapshot>> Begin(SqliteDb* db);
  ~SqliteReadSnapshot();
  SqliteReadSnapshot(const SqliteReadSnapshot&) = delete;
  SqliteReadSnapshot& operator=(const SqliteReadSnapshot&) = delete;

 private:
  explicit SqliteReadSnapshot(SqliteDb* db) : db_(db) {}
  SqliteDb* db_;  // null when the snapshot is a transaction opened before
};

}  // namespace roboloop
