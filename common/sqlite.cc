#include "common/sqlite.h"

#include <cerrno>
#include <chrono>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace roboloop {

SqliteStatement::SqliteStatement(SqliteDb* db, std::string sql, sqlite3_stmt* stmt)
    : db_(db), sql_(std::move(sql)), stmt_(stmt) {}

SqliteStatement::~SqliteStatement() { db_->Return(std::move(sql_), stmt_); }

absl::StatusOr<bool> SqliteStatement::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return db_->Error(rc, sql_);
}

absl::Status SqliteStatement::Run() {
  while (true) {
    ROBOLOOP_ASSIGN_OR_RETURN(bool row, Step());
    if (!row) return absl::OkStatus();
  }
}

int64_t SqliteStatement::Int(int i) const { return sqlite3_column_int64(stmt_, i); }

double SqliteStatement::Double(int i) const { return sqlite3_column_double(stmt_, i); }

std::string SqliteStatement::Text(int i) const {
  const unsigned char* text = sqlite3_column_text(stmt_, i);
  if (text == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, i)));
}

bool SqliteStatement::IsNull(int i) const { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }

SqliteDb::SqliteDb(sqlite3* db, std::string path, int busy_timeout_ms)
    : db_(db), path_(std::move(path)), busy_timeout_ms_(busy_timeout_ms) {}

SqliteDb::~SqliteDb() {
  checkpointer_.reset();
  for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
  sqlite3_close_v2(db_);
}

absl::StatusOr<std::unique_ptr<SqliteDb>> SqliteDb::Open(const std::string& path,
                                                         int busy_timeout_ms, bool create) {
  sqlite3* handle = nullptr;
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
  int rc = sqlite3_open_v2(path.c_str(), &handle, flags, nullptr);
  std::unique_ptr<SqliteDb> db(new SqliteDb(handle, path, busy_timeout_ms));
  if (rc != SQLITE_OK) return db->Error(rc, "open");
  sqlite3_extended_result_codes(handle, 1);
  sqlite3_busy_timeout(handle, busy_timeout_ms);
  return db;
}

absl::Status SqliteDb::Error(int rc, const std::string& context) const {
  std::string message = absl::StrCat("database ", path_, ": ", context, ": ",
                                     db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc));
  // A full disk reads SQLITE_FULL, or an I/O error whose system errno is ENOSPC (a WAL or
  // journal write); both are the same condition to the user: no space left for `path_`.
  const bool disk_full = (rc & 0xff) == SQLITE_FULL ||
                         ((rc & 0xff) == SQLITE_IOERR && db_ != nullptr &&
                          sqlite3_system_errno(db_) == ENOSPC);
  if (disk_full) {
    return absl::ResourceExhaustedError(
        absl::StrCat(message, " (no space left on device for ", path_, ")"));
  }
  if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE) {
    return absl::AlreadyExistsError(message);
  }
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(message);
    case SQLITE_CONSTRAINT:
      return absl::FailedPreconditionError(message);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::DataLossError(message);
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
      return absl::PermissionDeniedError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::Status SqliteDb::Exec(const std::string& sql) {
  char* error = nullptr;
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error);
  sqlite3_free(error);
  if (rc != SQLITE_OK) return Error(rc, sql.substr(0, 80));
  return absl::OkStatus();
}

bool SqliteDb::InTransaction() const { return sqlite3_get_autocommit(db_) == 0; }

absl::Status SqliteDb::UseWriteAheadLog() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_timeout_ms_);
  while (true) {
    int rc = sqlite3_exec(db_, "PRAGMA journal_mode = WAL", nullptr, nullptr, nullptr);
    if (rc == SQLITE_OK) return absl::OkStatus();
    bool busy = (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
    if (!busy || std::chrono::steady_clock::now() >= deadline) return Error(rc, "PRAGMA journal_mode = WAL");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

absl::Status SqliteDb::CheckpointInBackground(absl::Mutex* writers, int frames) {
  ROBOLOOP_ASSIGN_OR_RETURN(checkpointer_,
                            WalCheckpointer::Start(db_, path_, writers, frames, busy_timeout_ms_));
  return absl::OkStatus();
}

int SqliteDb::checkpoint_passes() const {
  return checkpointer_ != nullptr ? checkpointer_->passes() : 0;
}

absl::StatusOr<std::unique_ptr<SqliteStatement>> SqliteDb::Prepare(
    const std::string& sql, const std::vector<SqlValue>& params) {
  sqlite3_stmt* stmt = nullptr;
  auto cached = cache_.find(sql);
  if (cached != cache_.end()) {
    stmt = cached->second;
    cache_.erase(cached);
  } else {
    int rc = sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr);
    if (rc != SQLITE_OK) return Error(rc, absl::StrCat("prepare ", sql));
  }
  std::unique_ptr<SqliteStatement> statement(new SqliteStatement(this, sql, stmt));
  for (size_t i = 0; i < params.size(); ++i) {
    int index = static_cast<int>(i) + 1;
    int rc = SQLITE_OK;
    if (const auto* number = std::get_if<int64_t>(&params[i])) {
      rc = sqlite3_bind_int64(stmt, index, *number);
    } else if (const auto* real = std::get_if<double>(&params[i])) {
      rc = sqlite3_bind_double(stmt, index, *real);
    } else if (const auto* text = std::get_if<std::string>(&params[i])) {
      rc = sqlite3_bind_text(stmt, index, text->data(), static_cast<int>(text->size()),
                             SQLITE_TRANSIENT);
    } else {
      rc = sqlite3_bind_null(stmt, index);
    }
    if (rc != SQLITE_OK) return Error(rc, absl::StrCat("bind ", sql));
  }
  return statement;
}

absl::Status SqliteDb::Run(const std::string& sql, const std::vector<SqlValue>& params) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<SqliteStatement> statement, Prepare(sql, params));
  return statement->Run();
}

absl::StatusOr<int64_t> SqliteDb::QueryInt(const std::string& sql,
                                           const std::vector<SqlValue>& params, int64_t fallback) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<SqliteStatement> statement, Prepare(sql, params));
  ROBOLOOP_ASSIGN_OR_RETURN(bool row, statement->Step());
  if (!row || statement->IsNull(0)) return fallback;
  return statement->Int(0);
}

void SqliteDb::Return(std::string sql, sqlite3_stmt* stmt) {
  sqlite3_reset(stmt);
  sqlite3_clear_bindings(stmt);
  if (cache_.count(sql) == 0) {
    cache_.emplace(std::move(sql), stmt);
  } else {
    sqlite3_finalize(stmt);
  }
}

absl::StatusOr<std::unique_ptr<SqliteTransaction>> SqliteTransaction::Begin(SqliteDb* db) {
  ROBOLOOP_RETURN_IF_ERROR(db->Exec("BEGIN IMMEDIATE"));
  return std::unique_ptr<SqliteTransaction>(new SqliteTransaction(db));
}

SqliteTransaction::~SqliteTransaction() {
  if (!done_) db_->Exec("ROLLBACK").IgnoreError();
}

absl::Status SqliteTransaction::Commit() {
  ROBOLOOP_RETURN_IF_ERROR(db_->Exec("COMMIT"));
  done_ = true;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<SqliteReadSnapshot>> SqliteReadSnapshot::Begin(SqliteDb* db) {
  if (db->InTransaction()) return std::unique_ptr<SqliteReadSnapshot>(new SqliteReadSnapshot(nullptr));
  ROBOLOOP_RETURN_IF_ERROR(db->Run("BEGIN DEFERRED"));
  return std::unique_ptr<SqliteReadSnapshot>(new SqliteReadSnapshot(db));
}

SqliteReadSnapshot::~SqliteReadSnapshot() {
  if (db_ != nullptr) db_->Run("COMMIT").IgnoreError();
}

}  // namespace roboloop
