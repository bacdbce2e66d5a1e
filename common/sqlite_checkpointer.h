// Moves SQLite write-ahead-log checkpoints off the committing thread.
#pragma once

#include <sqlite3.h>

#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace roboloop {

// Watches one writer connection's commits through its WAL hook (which replaces SQLite's
// auto-checkpoint) and, once a commit leaves at least `frames` frames in the log, checkpoints on
// a background thread with its own connection: PASSIVE passes that copy the log into the
// database while writers go on (each one the frames committed during the one before, up to four,
// until at most 64 are left), then, holding `writers` (the mutex under which this process
// commits), once the log holds kRestartMultiple x `frames` frames, a last pass for the frames
// committed meanwhile. After it the log is fully copied, so the next commit restarts it from the
// beginning: the log stays below about kRestartMultiple x `frames` frames, and commits wait for
// the short last pass only once every kRestartMultiple checkpoints.
// Until the log restarts, every commit asks for another pass, so under steady load the passes
// run back to back and each copies only the few frames committed since the one before: counting
// only uncopied frames instead (one pass per `frames` new frames, 18x fewer passes) made each
// pass a burst of writes and fsyncs, and raised the registry benchmark's register p99 from
// 5.2-5.8 ms to 6.8 ms.
// The writer connection and `writers` must outlive this object.
class WalCheckpointer {
 public:
  // How many checkpoint sizes the log may reach before a pass under `writers` restarts it.
  static constexpr int kRestartMultiple = 8;

  static absl::StatusOr<std::unique_ptr<WalCheckpointer>> Start(sqlite3* writer, const std::string& path,
                                                                absl::Mutex* writers, int frames,
                                                                int busy_timeout_ms);
  // Stops the thread and restores SQLite's own auto-checkpoint on the writer.
  ~WalCheckpointer();
  WalCheckpointer(const WalCheckpointer&) = delete;
  WalCheckpointer& operator=(const WalCheckpointer&) = delete;

  // Background checkpoints completed so far.
  int passes() const;

 private:
  WalCheckpointer(sqlite3* writer, sqlite3* connection, absl::Mutex* writers, int frames);
  static int OnCommit(void* self, sqlite3* db, const char* schema, int frames_in_log);
  void Run();
  void Checkpoint();

  sqlite3* const writer_;
  sqlite3* const connection_;
  absl::Mutex* const writers_;
  const int frames_;
  mutable absl::Mutex mu_;
  bool pending_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  int passes_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace roboloop
