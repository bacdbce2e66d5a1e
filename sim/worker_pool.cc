#include "sim/worker_pool.h"

#include "absl/strings/str_cat.h"

namespace roboloop::sim {

absl::StatusOr<std::unique_ptr<WorkerPool>> WorkerPool::Create(const Options& options) {
  if (options.num_threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("threads must be >= 1, got ", options.num_threads));
  }
  return std::unique_ptr<WorkerPool>(new WorkerPool(options.num_threads));
}

WorkerPool::WorkerPool(int num_threads) {
  for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this, i] { WorkerMain(i); });
}

WorkerPool::~WorkerPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& worker : workers_) worker.join();
}

void WorkerPool::SetWorkerExitHook(std::function<void(int thread)> hook) {
  absl::MutexLock lock(&mu_);
  exit_hook_ = std::move(hook);
}

void WorkerPool::DrainIndices(int thread) {
  for (int i = next_index_.fetch_add(1); i < count_; i = next_index_.fetch_add(1)) {
    body_(context_, i, thread);
  }
}

void WorkerPool::StartLoop(int n, Body body, void* context) {
  absl::MutexLock lock(&mu_);
  body_ = body;
  context_ = context;
  count_ = n;
  next_index_.store(0);
  // A loop of one index runs on the caller alone: waking the workers would cost more.
  if (workers_.empty() || n <= 1) return;
  busy_workers_ = static_cast<int>(workers_.size());
  ++generation_;
}

void WorkerPool::Finish() {
  DrainIndices(0);
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](int* busy) { return *busy == 0; }, &busy_workers_));
  count_ = 0;
}

void WorkerPool::WorkerMain(int thread) {
  uint64_t seen = 0;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this, &seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || generation_ != seen;
      };
      mu_.Await(absl::Condition(&ready));
      if (stopping_) {
        if (exit_hook_) exit_hook_(thread);
        return;
      }
      seen = generation_;
    }
    DrainIndices(thread);
    absl::MutexLock lock(&mu_);
    --busy_workers_;
  }
}

}  // namespace roboloop::sim
