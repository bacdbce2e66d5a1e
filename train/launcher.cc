// Spawning and supervising local ranks.
#include "train/launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/status.h"

extern char** environ;

namespace roboloop::train {
namespace {

std::atomic<int> forwarded_signal{0};

void RememberSignal(int signal) { forwarded_signal.store(signal); }

std::vector<std::string> RankEnvironment(const LaunchOptions& options, int rank, int port) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    bool ours = false;
    for (const char* name : {"RANK=", "WORLD_SIZE=", "LOCAL_RANK=", "LOCAL_WORLD_SIZE=",
                             "MASTER_ADDR=", "MASTER_PORT="}) {
      ours = ours || entry.rfind(name, 0) == 0;
    }
    if (!ours) env.push_back(entry);
  }
  env.push_back(absl::StrCat("RANK=", rank));
  env.push_back(absl::StrCat("LOCAL_RANK=", rank));
  env.push_back(absl::StrCat("WORLD_SIZE=", options.nproc));
  env.push_back(absl::StrCat("LOCAL_WORLD_SIZE=", options.nproc));
  env.push_back(absl::StrCat("MASTER_ADDR=", options.master_addr));
  env.push_back(absl::StrCat("MASTER_PORT=", port));
  env.insert(env.end(), options.extra_env.begin(), options.extra_env.end());
  return env;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

std::string DescribeExit(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exited with code ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return absl::StrCat("was killed by signal ", WTERMSIG(status));
  return "stopped";
}

void SignalAll(const std::vector<pid_t>& pids, const std::vector<bool>& done, int signal) {
  for (size_t i = 0; i < pids.size(); ++i) {
    if (!done[i]) kill(pids[i], signal);
  }
}


// Starts `options.nproc` ranks of `options.argv` with their torchrun variables; on a failed start, those already
// started are sent SIGTERM.
absl::StatusOr<std::vector<pid_t>> StartRanks(const LaunchOptions& options, int port) {
  std::vector<std::string> argv = options.argv;
  std::vector<char*> argv_c = CStrings(argv);
  std::vector<pid_t> pids;
  for (int rank = 0; rank < options.nproc; ++rank) {
    std::vector<std::string> env = RankEnvironment(options, rank, port);
    std::vector<char*> env_c = CStrings(env);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, argv_c[0], nullptr, nullptr, argv_c.data(), env_c.data());
    if (rc != 0) {
      for (pid_t started : pids) kill(started, SIGTERM);
      return absl::InternalError(absl::StrCat("cannot start rank ", rank, " (", argv[0], "): ", std::strerror(rc)));
    }
    pids.push_back(pid);
  }
  return pids;
}

// While alive, SIGINT and SIGTERM are remembered (RememberSignal) instead of ending the launcher.
class RememberedSignals {
 public:
  RememberedSignals() {
    struct sigaction action {};
    action.sa_handler = RememberSignal;
    sigaction(SIGINT, &action, &old_int_);
    sigaction(SIGTERM, &action, &old_term_);
  }
  ~RememberedSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  RememberedSignals(const RememberedSignals&) = delete;
  RememberedSignals& operator=(const RememberedSignals&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// Waits for every rank. A remembered signal is forwarded to the ranks still running, once; `grace_seconds` after
// the first rank fails, the rest are killed. After a forwarded signal, CANCELLED (naming a rank that failed while
// stopping, if one did); else the first failure, naming its rank and how it ended; else OK.
absl::Status WaitForRanks(const std::vector<pid_t>& pids, double grace_seconds, int cancelled_exit_code) {
  std::vector<bool> done(pids.size(), false);
  size_t remaining = pids.size();
  std::string failure;
  auto failed_at = std::chrono::steady_clock::time_point::max();
  bool forwarded = false, terminated = false, any_cancelled = false;
  while (remaining > 0) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (size_t i = 0; i < pids.size(); ++i) {
        if (pids[i] != pid || done[i]) continue;
        done[i] = true;
        --remaining;
        const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        const bool cancelled =
            forwarded_signal.load() != 0 && WIFEXITED(status) && WEXITSTATUS(status) == cancelled_exit_code;
        any_cancelled = any_cancelled || cancelled;
        if (!ok && !cancelled && failure.empty()) {
          failure = absl::StrCat("rank ", i, " of ", pids.size(), " ", DescribeExit(status));
          failed_at = std::chrono::steady_clock::now();
        }
      }
      continue;
    }
    if (forwarded_signal.load() != 0 && !forwarded) {
      SignalAll(pids, done, forwarded_signal.load());
      forwarded = true;
    }
    const auto now = std::chrono::steady_clock::now();
    if (!terminated && now - failed_at > std::chrono::duration<double>(grace_seconds)) {
      SignalAll(pids, done, SIGKILL);
      terminated = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Asked to stop, a rank that fails (e.g. one still meeting the others when a peer left) fails the stop, not the run.
  if (!failure.empty() && forwarded_signal.load() != 0) {
    return absl::CancelledError(absl::StrCat("training cancelled; while stopping, ", failure));
  }
  if (!failure.empty()) return absl::AbortedError(absl::StrCat("training failed: ", failure));
  if (any_cancelled) return absl::CancelledError(absl::StrCat("training cancelled (", pids.size(), " ranks)"));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int> FreeLocalPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return ErrnoStatus(errno, "socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const absl::Status status = ErrnoStatus(errno, "binding a free port");
    close(fd);
    return status;
  }
  close(fd);
  return static_cast<int>(ntohs(address.sin_port));
}

absl::Status LaunchLocalRanks(const LaunchOptions& options) {
  if (options.nproc < 1) return absl::InvalidArgumentError("--nproc-per-node must be at least 1");
  int port = options.master_port;
  if (port == 0) {
    ROBOLOOP_ASSIGN_OR_RETURN(port, FreeLocalPort());
  }
  ROBOLOOP_ASSIGN_OR_RETURN(const std::vector<pid_t> pids, StartRanks(options, port));
  const RememberedSignals remembered;
  return WaitForRanks(pids, options.grace_seconds, options.cancelled_exit_code);
}

}  // namespace roboloop::train
