#include "common/child_process_call.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/utility/utility.h"
#include "common/status.h"

namespace roboloop {
namespace {

// The child's answer on the pipe: one byte holding the absl status code (0 = OK), then the
// value (OK) or the message (an error), up to the end of the stream.
std::string EncodeAnswer(const absl::StatusOr<std::string>& result) {
  const absl::StatusCode code = result.status().code();
  std::string answer(1, static_cast<char>(code));
  answer += result.ok() ? *result : std::string(result.status().message());
  return answer;
}

absl::StatusOr<std::string> DecodeAnswer(const std::string& answer) {
  const auto code = static_cast<absl::StatusCode>(static_cast<unsigned char>(answer[0]));
  std::string rest = answer.substr(1);
  if (code == absl::StatusCode::kOk) return rest;
  return absl::Status(code, rest);
}

// Writes all of `bytes` to `fd`; false when the reader is gone.
bool WriteAll(int fd, const std::string& bytes) {
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    written += static_cast<size_t>(n);
  }
  return true;
}

[[noreturn]] void RunChild(pid_t caller, int write_fd, const std::function<absl::StatusOr<std::string>()>& work) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a caller killed while waiting leaves no child behind
  if (::getppid() != caller) ::_exit(1);  // it died before the line above
  std::signal(SIGPIPE, SIG_IGN);
  const bool sent = WriteAll(write_fd, EncodeAnswer(work()));
  ::_exit(sent ? 0 : 1);
}

// Reads `fd` to its end or until `deadline`; false when the deadline came first.
bool ReadUntilEnd(int fd, absl::Time deadline, std::string* bytes) {
  char buffer[65536];
  while (true) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    pollfd readable{fd, POLLIN, 0};
    const int64_t wait_ms = left == absl::InfiniteDuration() ? -1 : absl::ToInt64Milliseconds(left) + 1;
    const int ready = ::poll(&readable, 1, static_cast<int>(std::min<int64_t>(wait_ms, 1 << 30)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // a timeout: the loop checks the deadline
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    bytes->append(buffer, static_cast<size_t>(n));
  }
}

int WaitForExit(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

absl::Status ErrnoError(const std::string& what, const char* call) {
  return absl::InternalError(absl::StrCat(what, ": ", call, " failed: ", std::strerror(errno)));
}

// The failure of a child that closed its pipe: a signal, or an exit without a whole answer.
absl::Status FailureOfAnsweredChild(const ChildCall& call, int wait_status, const std::string& answer) {
  if (WIFSIGNALED(wait_status)) {
    const int signal = WTERMSIG(wait_status);
    return absl::AbortedError(absl::StrCat(call.what, " crashed: its process died of signal ", signal, " (",
                                           ::strsignal(signal), ")"));
  }
  if (WEXITSTATUS(wait_status) != 0 || answer.empty()) {
    return absl::AbortedError(absl::StrCat(call.what, " ended without an answer: its process exited with code ",
                                           WEXITSTATUS(wait_status)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<absl::StatusOr<std::string>> RunInChildProcess(
    const ChildCall& call, const std::function<absl::StatusOr<std::string>()>& work) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return ErrnoError(call.what, "pipe2");
  const absl::Time deadline = call.time_limit == absl::InfiniteDuration() ? absl::InfiniteFuture()
                                                                            : absl::Now() + call.time_limit;
  const pid_t caller = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const absl::Status error = ErrnoError(call.what, "fork");
    ::close(fds[0]);
    ::close(fds[1]);
    return error;
  }
  if (pid == 0) {
    ::close(fds[0]);
    RunChild(caller, fds[1], work);
  }
  ::close(fds[1]);
  std::string answer;
  const bool finished = ReadUntilEnd(fds[0], deadline, &answer);
  ::close(fds[0]);
  if (!finished) ::kill(pid, SIGKILL);
  const int status = WaitForExit(pid);
  if (!finished) {
    return absl::DeadlineExceededError(
        absl::StrCat(call.what, " did not finish within ", absl::FormatDuration(call.time_limit), " and was stopped"));
  }
  ROBOLOOP_RETURN_IF_ERROR(FailureOfAnsweredChild(call, status, answer));
  return absl::StatusOr<absl::StatusOr<std::string>>(absl::in_place, DecodeAnswer(answer));
}

}  // namespace roboloop
