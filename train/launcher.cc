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
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/fs.h"
#include "common/status.h"
#include "train/rank_failure.h"

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

// How a rank ended.
struct RankEnd {
  int status = 0;                   // waitpid's
  int exit_order = 0;               // 0 for the first rank to exit
  bool killed_after_grace = false;  // the launcher killed it after a peer had failed
};

// Waits for every rank. A remembered signal is forwarded to the ranks still running, once; `grace_seconds` after
// the first rank fails, the rest are killed.
std::vector<RankEnd> WaitForRanks(const std::vector<pid_t>& pids, double grace_seconds) {
  std::vector<RankEnd> ends(pids.size());
  std::vector<bool> done(pids.size(), false);
  size_t remaining = pids.size();
  auto failed_at = std::chrono::steady_clock::time_point::max();
  bool forwarded = false, terminated = false;
  while (remaining > 0) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (size_t i = 0; i < pids.size(); ++i) {
        if (pids[i] != pid || done[i]) continue;
        done[i] = true;
        ends[i] = {status, static_cast<int>(pids.size() - remaining), terminated};
        --remaining;
        const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (!ok && failed_at == std::chrono::steady_clock::time_point::max()) {
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
  return ends;
}

// The failed rank to blame: of those that recorded a failure of their own, the earliest; else the first to exit
// of those that failed without a record and were not killed by the launcher (e.g. killed by the system); else the
// earliest record; else the first failed rank to exit. -1 when none failed.
int OriginRank(const std::vector<RankEnd>& ends, const std::vector<bool>& failed,
               const std::vector<std::optional<RankFailure>>& records) {
  const auto earliest = [&](auto&& eligible, auto&& key) {
    int best = -1;
    for (size_t i = 0; i < ends.size(); ++i) {
      if (failed[i] && eligible(i) && (best < 0 || key(i) < key(best))) best = static_cast<int>(i);
    }
    return best;
  };
  const auto record_time = [&](size_t i) { return records[i]->unix_micros; };
  const auto exit_order = [&](size_t i) { return int64_t{ends[i].exit_order}; };
  const int own = earliest([&](size_t i) { return records[i] && !records[i]->maybe_consequence; }, record_time);
  if (own >= 0) return own;
  const int unrecorded = earliest([&](size_t i) { return !records[i] && !ends[i].killed_after_grace; }, exit_order);
  if (unrecorded >= 0) return unrecorded;
  const int recorded = earliest([&](size_t i) { return records[i].has_value(); }, record_time);
  return recorded >= 0 ? recorded : earliest([](size_t) { return true; }, exit_order);
}

// "rank R of N <how it ended>[: <its error>][; rank B <how>: <its error> | with the same error, ...][; then, as a
// consequence, rank A <how>, ...]", naming the origin (OriginRank) first, then the other ranks that recorded a
// failure of their own, then the failed ranks that may have failed because of a peer; "" when no rank failed.
std::string DescribeFailure(const std::vector<RankEnd>& ends, const std::vector<bool>& failed,
                            const std::string& failure_dir) {
  std::vector<std::optional<RankFailure>> records;
  for (size_t i = 0; i < ends.size(); ++i) records.push_back(ReadRankFailure(failure_dir, static_cast<int>(i)));
  const int origin = OriginRank(ends, failed, records);
  if (origin < 0) return "";
  std::string text = absl::StrCat("rank ", origin, " of ", ends.size(), " ", DescribeExit(ends[origin].status));
  if (records[origin]) absl::StrAppend(&text, ": ", records[origin]->message);
  std::vector<std::string> consequences;
  for (size_t i = 0; i < ends.size(); ++i) {
    if (!failed[i] || static_cast<int>(i) == origin) continue;
    const std::string ended = absl::StrCat("rank ", i, " ", DescribeExit(ends[i].status));
    if (!records[i] || records[i]->maybe_consequence) {
      consequences.push_back(ended);
    } else if (records[origin] && records[i]->message == records[origin]->message) {
      absl::StrAppend(&text, "; ", ended, " with the same error");
    } else {
      absl::StrAppend(&text, "; ", ended, ": ", records[i]->message);
    }
  }
  if (!consequences.empty()) {
    absl::StrAppend(&text, "; then, as a consequence, ", absl::StrJoin(consequences, ", "));
  }
  return text;
}

// After a forwarded signal, CANCELLED (naming a rank that failed while stopping, if one did); else the failure
// (DescribeFailure); else OK.
absl::Status Outcome(const std::vector<RankEnd>& ends, int cancelled_exit_code, const std::string& failure_dir) {
  const bool signalled = forwarded_signal.load() != 0;
  std::vector<bool> failed;
  bool any_cancelled = false;
  for (const RankEnd& end : ends) {
    const bool ok = WIFEXITED(end.status) && WEXITSTATUS(end.status) == 0;
    const bool cancelled = signalled && WIFEXITED(end.status) && WEXITSTATUS(end.status) == cancelled_exit_code;
    any_cancelled = any_cancelled || cancelled;
    failed.push_back(!ok && !cancelled);
  }
  const std::string failure = DescribeFailure(ends, failed, failure_dir);
  // Asked to stop, a rank that fails (e.g. one still meeting the others when a peer left) fails the stop, not the run.
  if (!failure.empty() && signalled) {
    return absl::CancelledError(absl::StrCat("training cancelled; while stopping, ", failure));
  }
  if (!failure.empty()) return absl::AbortedError(absl::StrCat("training failed: ", failure));
  if (any_cancelled) return absl::CancelledError(absl::StrCat("training cancelled (", ends.size(), " ranks)"));
  return absl::OkStatus();
}

// A new empty folder for the ranks' failure records, removed with this object.
class FailureDir {
 public:
  static absl::StatusOr<FailureDir> Create() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = JoinPath(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "roboloop-ranks-XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr) return ErrnoStatus(errno, pattern);
    return FailureDir(pattern);
  }
  ~FailureDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  FailureDir(FailureDir&& other) noexcept : path_(std::exchange(other.path_, "")) {}
  FailureDir(const FailureDir&) = delete;
  FailureDir& operator=(const FailureDir&) = delete;
  FailureDir& operator=(FailureDir&&) = delete;
  const std::string& path() const { return path_; }

 private:
  explicit FailureDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

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
  ROBOLOOP_ASSIGN_OR_RETURN(const FailureDir failure_dir, FailureDir::Create());
  LaunchOptions with_records = options;
  with_records.extra_env.push_back(absl::StrCat(kRankFailureDirVariable, "=", failure_dir.path()));
  ROBOLOOP_ASSIGN_OR_RETURN(const std::vector<pid_t> pids, StartRanks(with_records, port));
  const RememberedSignals remembered;
  return Outcome(WaitForRanks(pids, options.grace_seconds), options.cancelled_exit_code, failure_dir.path());
}

}  // namespace roboloop::train
