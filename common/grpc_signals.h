// Graceful shutdown of a GrpcServer on SIGINT/SIGTERM, and re-reading its tokens file on SIGHUP,
// without async-signal-unsafe handlers: the signals are blocked in every thread and a waiting
// thread takes them with sigwait.
#pragma once

#include <csignal>
#include <memory>

#include "absl/status/statusor.h"
#include "common/grpc_server.h"

namespace roboloop::common {

// Holds SIGINT, SIGTERM and SIGHUP blocked for the process so they queue for Wait (servers).
// Create it in main() before any thread starts (gRPC's included): threads inherit the signal
// mask, and a thread that does not block the signals would take their default action (exit).
// Not thread-safe; one instance per process.
class ShutdownSignals {
 public:
  // Blocks SIGINT, SIGTERM and SIGHUP in the calling thread; errors if the mask cannot be changed.
  static absl::StatusOr<std::unique_ptr<ShutdownSignals>> Create();

  // Restores the calling thread's previous signal mask.
  ~ShutdownSignals();

  ShutdownSignals(const ShutdownSignals&) = delete;
  ShutdownSignals& operator=(const ShutdownSignals&) = delete;

  // Blocks until a held signal arrives and returns its number.
  int Wait() const;

  // As Wait, but gives up after `timeout` and returns 0.
  int WaitFor(absl::Duration timeout) const;

 private:
  ShutdownSignals(sigset_t waited, sigset_t previous) : waited_(waited), previous_(previous) {}

  const sigset_t waited_;
  const sigset_t previous_;
};

// Serves until SIGINT or SIGTERM arrives, then shuts `server` down gracefully (health
// NOT_SERVING, in-flight calls drain until the server's shutdown deadline) and returns the
// signal's number. Each SIGHUP in between re-reads the server's tokens file and logs the outcome
// (a bad file keeps the current callers); connections stay open.
int ServeUntilShutdownSignal(GrpcServer& server, const ShutdownSignals& signals);

}  // namespace roboloop::common
