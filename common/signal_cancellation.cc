// A self-pipe from the signal handler to a thread that cancels the token.
#include "common/signal_cancellation.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "common/status.h"

namespace roboloop::common {
namespace {

constexpr char kStop = 0;  // written by the destructor; signals write their (non-zero) number

std::atomic<int> handler_fd{-1};

void WriteSignalNumber(int signal) {
  const int saved_errno = errno;
  const char byte = static_cast<char>(signal);
  (void)!write(handler_fd.load(), &byte, 1);
  errno = saved_errno;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SignalCancellation>> SignalCancellation::Create(CancellationToken* token) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return ErrnoStatus(errno, "creating the signal pipe");
  std::unique_ptr<SignalCancellation> signals(new SignalCancellation(fds[0], fds[1]));
  handler_fd.store(fds[1]);
  signals->thread_ = std::thread([s = signals.get(), token] { s->ForwardSignals(token); });
  struct sigaction action {};
  action.sa_handler = WriteSignalNumber;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, &signals->previous_int_);
  sigaction(SIGTERM, &action, &signals->previous_term_);
  return signals;
}

SignalCancellation::~SignalCancellation() {
  sigaction(SIGINT, &previous_int_, nullptr);
  sigaction(SIGTERM, &previous_term_, nullptr);
  const char stop = kStop;
  (void)!write(write_fd_, &stop, 1);
  thread_.join();
  handler_fd.store(-1);
  close(read_fd_);
  close(write_fd_);
}

void SignalCancellation::ForwardSignals(CancellationToken* token) const {
  char byte = kStop;
  while (true) {
    const ssize_t n = read(read_fd_, &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || byte == kStop) return;
    token->Cancel(byte == SIGINT ? "received SIGINT" : "received SIGTERM");
  }
}

}  // namespace roboloop::common
