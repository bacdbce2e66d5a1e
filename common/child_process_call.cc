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

// Ties the child's life to the calling thread's: a caller killed while waiting leaves no child behind.
void DieWithCaller(pid_t caller) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != caller) ::_exit(1);  // it died before the line above
}

[[noreturn]] void RunChild(pid_t caller, int write_fd, const std::function<absl::StatusOr<std::string>()>& work) {
  DieWithCaller(caller);
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

// The child's end of the pipe is dup2'ed onto stderr, /dev/null onto stdin and stdout; then the program.
[[noreturn]] void ExecProgram(pid_t caller, int null_fd, int err_fd, char* const* argv) {
  DieWithCaller(caller);
  ::dup2(null_fd, STDIN_FILENO);
  ::dup2(null_fd, STDOUT_FILENO);
  ::dup2(err_fd, STDERR_FILENO);
  ::execv(argv[0], argv);
  ::_exit(127);
}

absl::Time DeadlineOf(const ChildCall& call) {
  return call.time_limit == absl::InfiniteDuration() ? absl::InfiniteFuture() : absl::Now() + call.time_limit;
}

absl::Status ForkError(const ChildCall& call, const int fds[2]) {
  const absl::Status error = ErrnoError(call.what, "fork");
  ::close(fds[0]);
  ::close(fds[1]);
  return error;
}

// Reads the child's pipe `read_fd` (closing it) to its end or `deadline`, killing the child at the deadline; then
// its wait status. DeadlineExceeded naming the limit when the child was killed.
absl::StatusOr<int> AwaitChild(const ChildCall& call, pid_t pid, int read_fd, absl::Time deadline, std::string* bytes) {
  const bool finished = ReadUntilEnd(read_fd, deadline, bytes);
  ::close(read_fd);
  if (!finished) ::kill(pid, SIGKILL);
  const int status = WaitForExit(pid);
  if (!finished) {
    return absl::DeadlineExceededError(
        absl::StrCat(call.what, " did not finish within ", absl::FormatDuration(call.time_limit), " and was stopped"));
  }
  return status;
}

absl::Status CrashError(const ChildCall& call, int signal) {
  return absl::AbortedError(
      absl::StrCat(call.what, " crashed: its process died of signal ", signal, " (", ::strsignal(signal), ")"));
}

// The failure of a child that closed its pipe: a signal, or an exit without a whole answer.
absl::Status FailureOfAnsweredChild(const ChildCall& call, int wait_status, const std::string& answer) {
  if (WIFSIGNALED(wait_status)) return CrashError(call, WTERMSIG(wait_status));
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
  const absl::Time deadline = DeadlineOf(call);
  const pid_t caller = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return ForkError(call, fds);
  if (pid == 0) {
    ::close(fds[0]);
    RunChild(caller, fds[1], work);
  }
  ::close(fds[1]);
  std::string answer;
  ROBOLOOP_ASSIGN_OR_RETURN(const int status, AwaitChild(call, pid, fds[0], deadline, &answer));
  ROBOLOOP_RETURN_IF_ERROR(FailureOfAnsweredChild(call, status, answer));
  return absl::StatusOr<absl::StatusOr<std::string>>(absl::in_place, DecodeAnswer(answer));
}

absl::StatusOr<ProgramEnd> RunProgramInChildProcess(const ChildCall& call, const std::vector<std::string>& argv) {
  std::vector<char*> argv_c;  // made before the fork: the child only calls async-signal-safe functions
  for (const std::string& arg : argv) argv_c.push_back(const_cast<char*>(arg.c_str()));
  argv_c.push_back(nullptr);
  const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd < 0) return ErrnoError(call.what, "open /dev/null");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    ::close(null_fd);
    return ErrnoError(call.what, "pipe2");
  }
  const absl::Time deadline = DeadlineOf(call);
  const pid_t caller = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(null_fd);
    return ForkError(call, fds);
  }
  if (pid == 0) ExecProgram(caller, null_fd, fds[1], argv_c.data());
  ::close(null_fd);
  ::close(fds[1]);
  ProgramEnd end;
  ROBOLOOP_ASSIGN_OR_RETURN(const int status, AwaitChild(call, pid, fds[0], deadline, &end.err));
  if (WIFSIGNALED(status)) return CrashError(call, WTERMSIG(status));
  end.exit_code = WEXITSTATUS(status);
  return end;
}

}  // namespace roboloop
