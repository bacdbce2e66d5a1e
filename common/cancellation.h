// One cancellation mechanism for the whole product (issue 27, req 5): a token that whoever may
// cancel raises and whoever works checks (IsCancelled, a cheap atomic read) or subscribes to
// (OnCancel, a callback). gRPC calls, pipeline stages, rollouts and training all take one.
// Tokens chain: a child registered on a parent is cancelled with it, and can be cancelled alone.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace roboloop::common {

class CancellationToken;

// Keeps a callback registered on a token while it lives. Destroying it unregisters the
// callback and, if the callback is running on another thread, waits for it to return.
// An empty registration (default-constructed or moved-from) does nothing.
class CancellationCallback {
 public:
  CancellationCallback() = default;
  CancellationCallback(CancellationCallback&& other) noexcept;
  CancellationCallback& operator=(CancellationCallback&& other) noexcept;
  CancellationCallback(const CancellationCallback&) = delete;
  CancellationCallback& operator=(const CancellationCallback&) = delete;
  ~CancellationCallback();

 private:
  friend class CancellationToken;
  CancellationCallback(const CancellationToken* token, std::uint64_t id) : token_(token), id_(id) {}
  void Release();

  const CancellationToken* token_ = nullptr;
  std::uint64_t id_ = 0;
};

// A cancellation flag with callbacks. Thread-safe; neither copyable nor movable (share it by
// pointer). A token must outlive every registration made on it.
class CancellationToken {
 public:
  CancellationToken() = default;
  CancellationToken(const CancellationToken&) = delete;
  CancellationToken& operator=(const CancellationToken&) = delete;

  // True once Cancel has been called (on this token or a parent it is linked to).
  bool IsCancelled() const noexcept { return cancelled_.load(std::memory_order_acquire); }

  // Why it was cancelled: the reason given to the first Cancel ("" before).
  std::string Reason() const;

  // Cancels. The first call records `reason` and runs every registered callback on the calling
  // thread, in registration order; later calls do nothing.
  void Cancel(const std::string& reason = "cancelled");

  // Runs `callback` once when the token is cancelled — at once, on this thread, when it already
  // is. The callback must not destroy its own registration.
  [[nodiscard]] CancellationCallback OnCancel(std::function<void()> callback) const;

  // Makes this token cancelled whenever `parent` is (with the parent's reason); null links
  // nothing. The link lives as long as the returned registration.
  [[nodiscard]] CancellationCallback LinkTo(const CancellationToken* parent);

 private:
  friend class CancellationCallback;
  void Unregister(std::uint64_t id) const;

  std::atomic<bool> cancelled_{false};
  mutable absl::Mutex mutex_;
  std::string reason_ ABSL_GUARDED_BY(mutex_);
  // Registrations are not part of the token's observable state: OnCancel works on a const token.
  mutable std::uint64_t next_id_ ABSL_GUARDED_BY(mutex_) = 1;
  mutable std::map<std::uint64_t, std::function<void()>> callbacks_ ABSL_GUARDED_BY(mutex_);
  mutable std::uint64_t running_id_ ABSL_GUARDED_BY(mutex_) = 0;    // callback running now (0 = none)
  mutable std::thread::id running_thread_ ABSL_GUARDED_BY(mutex_);  // the thread running it
  mutable absl::CondVar callback_finished_;                          // signalled after each callback
};

// True when `token` is non-null and cancelled: for code whose token is optional.
inline bool IsCancelled(const CancellationToken* token) { return token != nullptr && token->IsCancelled(); }

// Sleeps for `duration` or until `token` (may be null) is cancelled, whichever comes first;
// false when it was cancelled.
bool SleepUnlessCancelled(const CancellationToken* token, absl::Duration duration);

}  // namespace roboloop::common
