#include "common/grpc_signals.h"

#include <pthread.h>

#include <spdlog/spdlog.h>

#include "common/status.h"

namespace roboloop::common {

absl::StatusOr<std::unique_ptr<ShutdownSignals>> ShutdownSignals::Create() {
  sigset_t waited;
  sigemptyset(&waited);
  sigaddset(&waited, SIGINT);
  sigaddset(&waited, SIGTERM);
  sigaddset(&waited, SIGHUP);
  sigset_t previous;
  const int error = pthread_sigmask(SIG_BLOCK, &waited, &previous);
  if (error != 0) return ErrnoStatus(error, "blocking SIGINT/SIGTERM/SIGHUP");
  return std::unique_ptr<ShutdownSignals>(new ShutdownSignals(waited, previous));
}

ShutdownSignals::~ShutdownSignals() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }

int ShutdownSignals::Wait() const {
  int signal_number = 0;
  ROBOLOOP_CHECK(sigwait(&waited_, &signal_number) == 0);
  return signal_number;
}

int ShutdownSignals::WaitFor(absl::Duration timeout) const {
  const timespec limit = absl::ToTimespec(timeout);
  const int signal_number = sigtimedwait(&waited_, nullptr, &limit);
  return signal_number > 0 ? signal_number : 0;
}

int ServeUntilShutdownSignal(GrpcServer& server, const ShutdownSignals& signals) {
  int signal_number = signals.Wait();
  while (signal_number == SIGHUP) {
    const absl::Status reloaded = server.ReloadTokensFile();
    if (reloaded.ok()) {
      spdlog::info("SIGHUP: tokens file re-read");
    } else {
      spdlog::error("SIGHUP: tokens file not re-read, current callers kept: {}", reloaded.ToString());
    }
    signal_number = signals.Wait();
  }
  server.Shutdown();
  return signal_number;
}

}  // namespace roboloop::common
