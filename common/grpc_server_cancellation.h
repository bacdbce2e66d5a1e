// Server-side cancellation of sync gRPC calls (issue 27): the sync API has no cancellation
// callback, so one watcher thread per call polls ServerContext::IsCancelled and cancels a
// CancellationToken when the client cancels the call (or its deadline passes). Services hand
// the token to the work, which checks or subscribes to it like any other token.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>

#include "absl/time/time.h"
#include "common/cancellation.h"

namespace roboloop::common {

// Watches one call while it lives; destroying it stops the watcher (and joins its thread).
// Movable, not copyable. A default-constructed or moved-from watch watches nothing.
class ServerCallCancellationWatch {
 public:
  ServerCallCancellationWatch() = default;
  ServerCallCancellationWatch(ServerCallCancellationWatch&&) noexcept = default;
  ServerCallCancellationWatch& operator=(ServerCallCancellationWatch&&) noexcept;
  ~ServerCallCancellationWatch();

 private:
  friend ServerCallCancellationWatch WatchServerCallCancellation(grpc::ServerContext*, CancellationToken*,
                                                                absl::Duration);
  struct Watcher;
  explicit ServerCallCancellationWatch(std::unique_ptr<Watcher> watcher);
  void Stop();

  std::unique_ptr<Watcher> watcher_;
};

// Cancels `token` once `context` reports the call cancelled, with the reason "the client
// cancelled the call" or, when a server-side limit cancelled it, the limit's message
// (common/grpc_call_limits.h); checking every `poll`, until the returned watch is destroyed. `context` and
// `token` must outlive the watch; declare the watch after the token so it goes first.
[[nodiscard]] ServerCallCancellationWatch WatchServerCallCancellation(
    grpc::ServerContext* context, CancellationToken* token, absl::Duration poll = absl::Milliseconds(50));

}  // namespace roboloop::common
