// SIGINT/SIGTERM as a cancellation (issue 27): while a SignalCancellation lives, either signal
// cancels its token. The handler only writes the signal's number to a pipe (async-signal-safe);
// a thread of its own reads it and calls Cancel, so callbacks run on an ordinary thread.
#pragma once

#include <csignal>
#include <memory>
#include <thread>

#include "absl/status/statusor.h"
#include "common/cancellation.h"

namespace roboloop::common {

// At most one per process at a time. Not copyable or movable.
class SignalCancellation {
 public:
  // Installs the handlers; `token` must outlive the result. Errors when the pipe cannot be made.
  static absl::StatusOr<std::unique_ptr<SignalCancellation>> Create(CancellationToken* token);

  // Restores the previous handlers and stops the thread.
  ~SignalCancellation();

  SignalCancellation(const SignalCancellation&) = delete;
  SignalCancellation& operator=(const SignalCancellation&) = delete;

 private:
  SignalCancellation(int read_fd, int write_fd) : read_fd_(read_fd), write_fd_(write_fd) {}
  void ForwardSignals(CancellationToken* token) const;

  const int read_fd_;
  const int write_fd_;
  struct sigaction previous_int_ {};
  struct sigaction previous_term_ {};
  std::thread thread_;
};

}  // namespace roboloop::common
