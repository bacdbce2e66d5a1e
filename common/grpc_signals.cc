#include "common/grpc_signals.h"

#include <pthread.h>

#include "common/status.h"

namespace roboloop::common {

absl::StatusOr<std::unique_ptr<ShutdownSignals>> ShutdownSignals::Create() {
  sigset_t waited;
  sigemptyset(&waited);
  sigaddset(&waited, SIGINT);
  sigaddset(&waited, SIGTERM);
  sigset_t previous;
  const int error = pthread_sigmask(SIG_BLOCK, &waited, &previous);
  if (error != 0) return ErrnoStatus(error, "blocking SIGINT/SIGTERM");
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
  const int signal_number = signals.Wait();
  server.Shutdown();
  return signal_number;
}

}  // namespace roboloop::common
