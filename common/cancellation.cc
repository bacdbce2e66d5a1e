#include "common/cancellation.h"

#include <utility>

#include "absl/synchronization/notification.h"

namespace roboloop::common {

CancellationCallback::CancellationCallback(CancellationCallback&& other) noexcept
    : token_(std::exchange(other.token_, nullptr)), id_(std::exchange(other.id_, 0)) {}

CancellationCallback& CancellationCallback::operator=(CancellationCallback&& other) noexcept {
  if (this != &other) {
    Release();
    token_ = std::exchange(other.token_, nullptr);
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

CancellationCallback::~CancellationCallback() { Release(); }

void CancellationCallback::Release() {
  if (token_ != nullptr) token_->Unregister(id_);
  token_ = nullptr;
  id_ = 0;
}

std::string CancellationToken::Reason() const {
  absl::MutexLock lock(&mutex_);
  return reason_;
}

void CancellationToken::Cancel(const std::string& reason) {
  {
    absl::MutexLock lock(&mutex_);
    if (cancelled_.load(std::memory_order_relaxed)) return;
    reason_ = reason;
    cancelled_.store(true, std::memory_order_release);
  }
  // Callbacks run one at a time outside the lock, so they may register or cancel other tokens;
  // a registration destroyed meanwhile is skipped, or waited for while it runs.
  std::uint64_t after = 0;
  while (true) {
    std::function<void()> callback;
    {
      absl::MutexLock lock(&mutex_);
      callback_finished_.SignalAll();
      auto next = callbacks_.upper_bound(after);
      if (next == callbacks_.end()) {
        running_id_ = 0;
        return;
      }
      after = next->first;
      callback = std::move(next->second);
      callbacks_.erase(next);
      running_id_ = after;
      running_thread_ = std::this_thread::get_id();
    }
    callback();
  }
}

CancellationCallback CancellationToken::OnCancel(std::function<void()> callback) const {
  {
    absl::MutexLock lock(&mutex_);
    if (!cancelled_.load(std::memory_order_relaxed)) {
      const std::uint64_t id = next_id_++;
      callbacks_.emplace(id, std::move(callback));
      return CancellationCallback(this, id);
    }
  }
  callback();
  return CancellationCallback();
}

CancellationCallback CancellationToken::LinkTo(const CancellationToken* parent) {
  if (parent == nullptr) return CancellationCallback();
  return parent->OnCancel([this, parent] { Cancel(parent->Reason()); });
}

void CancellationToken::Unregister(std::uint64_t id) const {
  absl::MutexLock lock(&mutex_);
  callbacks_.erase(id);
  // A callback running on another thread must finish before its captures may go away.
  if (running_id_ == id && running_thread_ != std::this_thread::get_id()) {
    while (running_id_ == id) callback_finished_.Wait(&mutex_);
  }
}

bool SleepUnlessCancelled(const CancellationToken* token, absl::Duration duration) {
  if (token == nullptr) {
    absl::SleepFor(duration);
    return true;
  }
  absl::Notification cancelled;
  CancellationCallback wake = token->OnCancel([&cancelled] { cancelled.Notify(); });
  return !cancelled.WaitForNotificationWithTimeout(duration);
}

}  // namespace roboloop::common
