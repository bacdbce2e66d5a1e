// A fixed set of worker threads that run one parallel loop at a time, without allocating
// per loop (the env pool steps physics through it every env step).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace roboloop::sim {

// Runs parallel loops over `num_threads` threads (the caller's thread counts as one). One
// loop runs at a time and loops are started from one thread at a time; the pool joins its
// workers on destruction.
class WorkerPool {
 public:
  // Options of a pool.
  struct Options {
    int num_threads = 1;  // threads running a loop, including the caller; >= 1
  };

  // Starts num_threads − 1 workers; InvalidArgument if num_threads < 1.
  static absl::StatusOr<std::unique_ptr<WorkerPool>> Create(const Options& options);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Calls fn(i) for every i in [0, n), spread over the threads; returns when all are done.
  // `fn` may instead take (i, thread): `thread` in [0, num_threads()) names the thread running
  // it (0 = the caller's), so that a loop can use per-thread resources (a GL context).
  template <typename Fn>
  void ParallelFor(int n, Fn& fn) {
    Start(n, fn);
    Finish();
  }

  // Starts fn(i) for every i in [0, n) on the workers and returns at once, so the caller
  // can do other work meanwhile; Finish() must follow before the next Start and before
  // `fn` goes away. With no workers, nothing runs until Finish.
  template <typename Fn>
  void Start(int n, Fn& fn) {
    StartLoop(n, &CallBody<Fn>, &fn);
  }

  // Runs the started loop's remaining indices on the caller's thread and returns when all
  // are done. A no-op when no loop was started.
  void Finish();

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Sets what each worker runs on its own thread as it stops (`thread` in 1..num_threads()-1),
  // e.g. freeing a per-thread GL context, which only its thread may release. Call before
  // destruction, with no loop running. The hook runs under the pool's lock: it must not call the pool.
  void SetWorkerExitHook(std::function<void(int thread)> hook);

 private:
  using Body = void (*)(void* context, int index, int thread);
  template <typename Fn>
  static void CallBody(void* context, int index, int thread) {
    if constexpr (std::is_invocable_v<Fn&, int, int>) {
      (*static_cast<Fn*>(context))(index, thread);
    } else {
      (*static_cast<Fn*>(context))(index);
    }
  }
  explicit WorkerPool(int num_threads);
  void StartLoop(int n, Body body, void* context);
  void WorkerMain(int thread);
  void DrainIndices(int thread);

  absl::Mutex mu_;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  int busy_workers_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // The current loop; written under mu_ before generation_ advances, read by workers after.
  Body body_ = nullptr;
  void* context_ = nullptr;
  int count_ = 0;
  std::atomic<int> next_index_{0};
  std::function<void(int)> exit_hook_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> workers_;
};

}  // namespace roboloop::sim
