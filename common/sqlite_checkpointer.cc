#include "common/sqlite_checkpointer.h"

#include "absl/strings/str_cat.h"

namespace roboloop {

absl::StatusOr<std::unique_ptr<WalCheckpointer>> WalCheckpointer::Start(sqlite3* writer,
                                                                        const std::string& path,
                                                                        absl::Mutex* writers,
                                                                        int frames,
                                                                        int busy_timeout_ms) {
  sqlite3* connection = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &connection, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    std::string message = connection != nullptr ? sqlite3_errmsg(connection) : sqlite3_errstr(rc);
    sqlite3_close_v2(connection);
    return absl::InternalError(
        absl::StrCat("database ", path, ": open the checkpoint connection: ", message));
  }
  sqlite3_busy_timeout(connection, busy_timeout_ms);
  // SQLite 3.40 checkpoints only from a connection that has opened the log, which a read does.
  rc = sqlite3_exec(connection, "SELECT COUNT(*) FROM sqlite_master", nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = sqlite3_errmsg(connection);
    sqlite3_close_v2(connection);
    return absl::InternalError(
        absl::StrCat("database ", path, ": read from the checkpoint connection: ", message));
  }
  std::unique_ptr<WalCheckpointer> checkpointer(
      new WalCheckpointer(writer, connection, writers, frames));
  sqlite3_wal_hook(writer, &WalCheckpointer::OnCommit, checkpointer.get());
  return checkpointer;
}

WalCheckpointer::WalCheckpointer(sqlite3* writer, sqlite3* connection, absl::Mutex* writers,
                                 int frames)
    : writer_(writer),
      connection_(connection),
      writers_(writers),
      frames_(frames),
      thread_([this] { Run(); }) {}

WalCheckpointer::~WalCheckpointer() {
  sqlite3_wal_autocheckpoint(writer_, frames_);
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
  sqlite3_close_v2(connection_);
}

int WalCheckpointer::passes() const {
  absl::MutexLock lock(&mu_);
  return passes_;
}

int WalCheckpointer::OnCommit(void* self, sqlite3*, const char*, int frames_in_log) {
  auto* checkpointer = static_cast<WalCheckpointer*>(self);
  if (frames_in_log >= checkpointer->frames_) {
    absl::MutexLock lock(&checkpointer->mu_);
    checkpointer->pending_ = true;
  }
  return SQLITE_OK;
}

void WalCheckpointer::Run() {
  absl::MutexLock lock(&mu_);
  while (true) {
    mu_.Await(absl::Condition(
        +[](WalCheckpointer* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) {
          return self->pending_ || self->stop_;
        },
        this));
    if (stop_) return;
    pending_ = false;
    mu_.Unlock();
    Checkpoint();
    mu_.Lock();
    ++passes_;
  }
}

void WalCheckpointer::Checkpoint() {
  // Unlocked passes copy the frames committed during the previous pass, until few are left, so
  // that the locked pass (which writers wait for) copies only those few.
  constexpr int kMaxUnlockedPasses = 4;
  constexpr int kFramesLeftForTheLockedPass = 64;
  int log_frames = 0;
  for (int pass = 0; pass < kMaxUnlockedPasses; ++pass) {
    int copied_frames = 0;
    const int rc = sqlite3_wal_checkpoint_v2(connection_, nullptr, SQLITE_CHECKPOINT_PASSIVE,
                                             &log_frames, &copied_frames);
    if (rc != SQLITE_OK || log_frames - copied_frames <= kFramesLeftForTheLockedPass) break;
  }
  // The locked pass (two fsyncs that every commit waits for) runs only once the log has grown
  // to kRestartMultiple times the checkpoint size: the log is restarted, but rarely.
  if (log_frames < kRestartMultiple * frames_) return;
  absl::MutexLock writers(writers_);
  sqlite3_wal_checkpoint_v2(connection_, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
}

}  // namespace roboloop
