// One polling thread per watched call.
#include "common/grpc_server_cancellation.h"

#include <thread>

#include "absl/synchronization/notification.h"
#include "common/grpc_call_limits.h"

namespace roboloop::common {

struct ServerCallCancellationWatch::Watcher {
  absl::Notification stop;
  std::thread thread;
};

ServerCallCancellationWatch::ServerCallCancellationWatch(std::unique_ptr<Watcher> watcher)
    : watcher_(std::move(watcher)) {}

ServerCallCancellationWatch& ServerCallCancellationWatch::operator=(ServerCallCancellationWatch&& other) noexcept {
  if (this != &other) {
    Stop();
    watcher_ = std::move(other.watcher_);
  }
  return *this;
}

ServerCallCancellationWatch::~ServerCallCancellationWatch() { Stop(); }

void ServerCallCancellationWatch::Stop() {
  if (watcher_ == nullptr) return;
  watcher_->stop.Notify();
  watcher_->thread.join();
  watcher_.reset();
}

ServerCallCancellationWatch WatchServerCallCancellation(grpc::ServerContext* context, CancellationToken* token,
                                                        absl::Duration poll) {
  auto watcher = std::make_unique<ServerCallCancellationWatch::Watcher>();
  absl::Notification* stop = &watcher->stop;
  watcher->thread = std::thread([context, token, poll, stop] {
    while (!stop->WaitForNotificationWithTimeout(poll)) {
      if (context->IsCancelled()) {
        token->Cancel(CallLimitBreach(*context).value_or("the client cancelled the call"));
        return;
      }
    }
  });
  return ServerCallCancellationWatch(std::move(watcher));
}

}  // namespace roboloop::common
