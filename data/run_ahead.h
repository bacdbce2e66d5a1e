// A producer run one item ahead of its consumer on a thread of its own, so that producing item
// k + 1 (e.g. decoding video) overlaps consuming item k (e.g. compressing and writing it).
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "absl/status/statusor.h"

namespace roboloop::data {

// Calls `produce` on its own thread: it returns the next item, nullopt after the last, or an
// error; after nullopt or an error it is not called again. Next() hands the results over in
// order. At most two items exist at a time: the one the consumer holds and the one being
// produced (`produce` starts on item k + 1 once the consumer has taken item k). Destroying the
// RunAhead waits for the item in progress and produces no more. `produce` runs on the other
// thread only, so state it uses must not be touched by the consumer meanwhile.
template <typename T>
class RunAhead {
 public:
  using Result = absl::StatusOr<std::optional<T>>;

  explicit RunAhead(std::function<Result()> produce)
      : produce_(std::move(produce)), thread_([this] { Loop(); }) {}

  ~RunAhead() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }

  RunAhead(const RunAhead&) = delete;
  RunAhead& operator=(const RunAhead&) = delete;

  // The next result of `produce`, waiting for it. Once it has returned nullopt or an error,
  // returns that same kind again: nullopt, or FailedPrecondition after an error.
  Result Next() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (finished_ && !slot_.has_value()) {
      if (failed_) return absl::FailedPreconditionError("RunAhead: the producer failed before");
      return std::optional<T>();
    }
    changed_.wait(lock, [this] { return slot_.has_value(); });
    Result result = std::move(*slot_);
    slot_.reset();
    changed_.notify_all();
    return result;
  }

 private:
  void Loop() {
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [this] { return stop_ || !slot_.has_value(); });
        if (stop_) return;
      }
      Result result = produce_();
      const bool last = !result.ok() || !result->has_value();
      {
        std::lock_guard<std::mutex> lock(mutex_);
        finished_ = last;
        failed_ = !result.ok();
        slot_ = std::move(result);
      }
      changed_.notify_all();
      if (last) return;
    }
  }

  std::function<Result()> produce_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::optional<Result> slot_;  // produced, not yet taken
  bool stop_ = false;
  bool finished_ = false;  // the producer returned nullopt or an error
  bool failed_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace roboloop::data
