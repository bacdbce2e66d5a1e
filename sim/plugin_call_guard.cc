#include "sim/plugin_call_guard.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <deque>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status.h"

namespace roboloop::sim {
namespace {

constexpr double kDefaultCallLimitS = 60.0;
constexpr double kMaxCallLimitS = 1e9;  // keeps the limit in nanoseconds within int64
constexpr size_t kAltStackBytes = 64 * 1024;
constexpr auto kFlushGrace = std::chrono::seconds(1);  // how long a timed-out process tries to flush

// The calls of one thread. Slots are never freed (the watchdog may be reading one): a thread
// that ends hands its slot on to the next thread that calls a plug-in.
struct CallSlot {
  // +1 when a call starts and +1 when it ends: odd while a call is in progress. A counter rather
  // than a start time keeps clock reads out of the calls; the watchdog times what it sees.
  std::atomic<uint64_t> calls{0};
  std::atomic<const PluginCallSite*> site{nullptr};  // of the call in progress
  bool in_use = false;            // guarded by SlotTable::mutex
  uint64_t watched_calls = 0;     // the watchdog's: `calls` when it first saw the current call,
  int64_t watched_since_ns = 0;   // and when
};

struct SlotTable {
  std::mutex mutex;
  std::deque<CallSlot> slots;
};

// Never destroyed: the detached watchdog reads it until the process ends.
SlotTable& Slots() {
  static SlotTable* table = new SlotTable;
  return *table;
}

std::atomic<int64_t> call_limit_ns{0};  // 0 = no limit
// What set call_limit_ns, as the watchdog's message names it: the variable or an override's source.
std::atomic<const char*> call_limit_source{kPluginCallTimeoutVariable};

// A limit set by SetPluginCallTimeout, over the environment's. Never freed (the watchdog reads its
// source); null while none is set.
struct CallLimitOverride {
  int64_t limit_ns = 0;
  std::string source;
};
std::atomic<const CallLimitOverride*> call_limit_override{nullptr};

// Trivially initialised and initial-exec (roboloop links this module statically), so the crash
// handler may read it and a call reaches it with one load.
thread_local CallSlot* this_thread_slot __attribute__((tls_model("initial-exec"))) = nullptr;

// Counts the start or the end of a call on `slot` (only its owner thread writes `calls`).
void CountCallEdge(CallSlot* slot) {
  slot->calls.store(slot->calls.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

// Hands this thread's slot back, and frees the signal stack it installed, when the thread ends.
struct ThreadSlotRelease {
  void* alt_stack = nullptr;
  ~ThreadSlotRelease() {
    if (alt_stack != nullptr) {
      stack_t disable{};
      disable.ss_flags = SS_DISABLE;
      sigaltstack(&disable, nullptr);
      std::free(alt_stack);
    }
    if (this_thread_slot == nullptr) return;
    std::lock_guard<std::mutex> lock(Slots().mutex);
    // A thread that ended inside a call (pthread_exit) is not hung.
    if ((this_thread_slot->calls.load(std::memory_order_relaxed) & 1) != 0) CountCallEdge(this_thread_slot);
    this_thread_slot->in_use = false;
    this_thread_slot = nullptr;
  }
};
thread_local ThreadSlotRelease this_thread_release;

// Gives the thread a signal stack when it has none, so that a plug-in that overflows its stack
// still gets its message written.
void EnsureAltStack(ThreadSlotRelease& release) {
  stack_t current{};
  if (sigaltstack(nullptr, &current) != 0 || (current.ss_flags & SS_DISABLE) == 0) return;
  void* memory = std::malloc(kAltStackBytes);
  if (memory == nullptr) return;
  stack_t stack{};
  stack.ss_sp = memory;
  stack.ss_size = kAltStackBytes;
  if (sigaltstack(&stack, nullptr) != 0) {
    std::free(memory);
    return;
  }
  release.alt_stack = memory;
}

CallSlot* ClaimSlot() {
  EnsureAltStack(this_thread_release);  // the first use registers the release at thread exit
  SlotTable& table = Slots();
  std::lock_guard<std::mutex> lock(table.mutex);
  auto free_slot = std::find_if(table.slots.begin(), table.slots.end(), [](const CallSlot& s) { return !s.in_use; });
  CallSlot* slot = free_slot != table.slots.end() ? &*free_slot : &table.slots.emplace_back();
  slot->in_use = true;
  return slot;
}

// --- Crash handler (async-signal-safe from here to InstallCrashHandler) ---

constexpr int kCrashSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
struct sigaction previous_actions[std::size(kCrashSignals)];

const char* SignalDescription(int signal_number) {
  switch (signal_number) {
    case SIGSEGV: return "SIGSEGV (invalid memory access)";
    case SIGBUS: return "SIGBUS (bus error)";
    case SIGFPE: return "SIGFPE (arithmetic error)";
    case SIGILL: return "SIGILL (illegal instruction)";
    case SIGABRT: return "SIGABRT (abort)";
  }
  return "a crash signal";
}

void WriteToStderr(const char* text) {
  size_t left = std::strlen(text);
  while (left > 0) {
    const ssize_t written = write(STDERR_FILENO, text, left);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return;
    text += written;
    left -= static_cast<size_t>(written);
  }
}

// Restores the default action; the signal, blocked while its handler runs, is delivered (and
// kills the process) when the handler returns. A fault re-executes and faults again anyway.
void DieOfSignal(int signal_number) {
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  sigaction(signal_number, &default_action, nullptr);
  raise(signal_number);
}

void ForwardToPreviousHandler(int signal_number, siginfo_t* info, void* context) {
  for (size_t i = 0; i < std::size(kCrashSignals); ++i) {
    if (kCrashSignals[i] != signal_number) continue;
    const struct sigaction& previous = previous_actions[i];
    if ((previous.sa_flags & SA_SIGINFO) != 0) {
      previous.sa_sigaction(signal_number, info, context);
    } else if (previous.sa_handler == SIG_DFL || previous.sa_handler == SIG_IGN) {
      DieOfSignal(signal_number);
    } else {
      previous.sa_handler(signal_number);
    }
    return;
  }
}

const PluginCallSite* PluginCallOnThisThread() {
  const CallSlot* slot = this_thread_slot;
  if (slot == nullptr || (slot->calls.load(std::memory_order_relaxed) & 1) == 0) return nullptr;
  return slot->site.load(std::memory_order_relaxed);
}

void OnCrashSignal(int signal_number, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const PluginCallSite* site = PluginCallOnThisThread();
  if (site == nullptr) {
    errno = saved_errno;
    ForwardToPreviousHandler(signal_number, info, context);
    return;
  }
  WriteToStderr(site->crash_message_prefix().c_str());
  WriteToStderr(SignalDescription(signal_number));
  WriteToStderr("; the process dies of that signal\n");
  DieOfSignal(signal_number);
}

void InstallCrashHandler() {
  for (size_t i = 0; i < std::size(kCrashSignals); ++i) {
    struct sigaction action {};
    action.sa_sigaction = OnCrashSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigaction(kCrashSignals[i], &action, &previous_actions[i]);
  }
}

// --- Watchdog ---

// Flushes every stdio stream (stdout keeps what the process printed after its last newline, or
// everything when it is not line-buffered; spdlog's sinks write through stdio), waiting at most
// kFlushGrace. The flush runs on a thread of its own because it may never end: the hung thread may
// hold a stream's lock (it hung inside printf, or holds flockfile) or stdout may be a pipe that no
// one reads. Past the grace the watchdog stops waiting, and _Exit ends the flushing thread with the
// process: output can still be lost then, but the process never deadlocks on its way out.
void FlushOutputWithinGrace() {
  auto flushed = std::make_shared<std::atomic<bool>>(false);
  try {
    std::thread([flushed] {
      std::fflush(nullptr);
      flushed->store(true);
    }).detach();
  } catch (const std::system_error&) {
    return;  // no thread to spare: exit without flushing rather than risk blocking here
  }
  const auto deadline = std::chrono::steady_clock::now() + kFlushGrace;
  while (!flushed->load() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

[[noreturn]] void ExitForHungCall(const PluginCallSite& site, int64_t limit_ns) {
  const std::string message =
      absl::StrCat("roboloop: ", site.plugin(), " has not returned from its ", site.callback(), " within the limit of ",
                   static_cast<double>(limit_ns) / 1e9, " s (", call_limit_source.load(),
                   "); a hung call cannot be cancelled, so the process exits\n");
  WriteToStderr(message.c_str());
  FlushOutputWithinGrace();
  std::_Exit(kPluginCallTimeoutExitCode);
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The first call that has been in progress for at least `limit_ns` since the watchdog first saw
// it (so it started earlier still), or null; notes the calls it sees for the first time.
const PluginCallSite* FindHungCall(int64_t now_ns, int64_t limit_ns) {
  SlotTable& table = Slots();
  std::lock_guard<std::mutex> lock(table.mutex);
  for (CallSlot& slot : table.slots) {
    const uint64_t calls = slot.calls.load(std::memory_order_acquire);
    if ((calls & 1) == 0) continue;
    if (calls != slot.watched_calls) {
      slot.watched_calls = calls;
      slot.watched_since_ns = now_ns;
      continue;
    }
    if (now_ns - slot.watched_since_ns < limit_ns) continue;
    const PluginCallSite* site = slot.site.load(std::memory_order_acquire);
    // The same call still runs when the counter is unchanged (the site was read in between).
    if (slot.calls.load(std::memory_order_acquire) == calls) return site;
  }
  return nullptr;
}

[[noreturn]] void WatchPluginCalls() {
  for (;;) {
    const int64_t limit_ns = call_limit_ns.load();
    const int64_t interval_ns = limit_ns == 0 ? 1000000000 : std::clamp<int64_t>(limit_ns / 4, 10000000, 1000000000);
    std::this_thread::sleep_for(std::chrono::nanoseconds(interval_ns));
    if (limit_ns == 0) continue;
    if (const PluginCallSite* hung = FindHungCall(NowNs(), limit_ns)) ExitForHungCall(*hung, limit_ns);
  }
}

// `seconds` as a limit in nanoseconds; InvalidArgument naming `source` and `text` (the value as
// given) when it is not a number of seconds >= 0.
absl::StatusOr<int64_t> CallLimitNs(double seconds, absl::string_view source, absl::string_view text) {
  if (!std::isfinite(seconds) || seconds < 0.0 || seconds > kMaxCallLimitS) {
    return absl::InvalidArgumentError(absl::StrCat(source, "='", text,
                                                   "' must be the time limit of one plug-in call in seconds, "
                                                   "a number >= 0 (0 = no limit)"));
  }
  return static_cast<int64_t>(seconds * 1e9);
}

absl::StatusOr<int64_t> CallLimitFromEnvironment() {
  const char* value = std::getenv(kPluginCallTimeoutVariable);
  if (value == nullptr || *value == '\0') return static_cast<int64_t>(kDefaultCallLimitS * 1e9);
  double seconds = 0.0;
  if (!absl::SimpleAtod(value, &seconds)) seconds = -1.0;  // refused below, naming the text
  return CallLimitNs(seconds, kPluginCallTimeoutVariable, value);
}

// The limit calls get and what set it: an override, else the environment (or the default).
absl::Status ChooseCallLimit() {
  if (const CallLimitOverride* chosen = call_limit_override.load()) {
    call_limit_ns.store(chosen->limit_ns);
    call_limit_source.store(chosen->source.c_str());
    return absl::OkStatus();
  }
  ROBOLOOP_ASSIGN_OR_RETURN(const int64_t limit_ns, CallLimitFromEnvironment());
  call_limit_ns.store(limit_ns);
  call_limit_source.store(kPluginCallTimeoutVariable);
  return absl::OkStatus();
}

}  // namespace

PluginCallSite::PluginCallSite(std::string plugin, std::string callback)
    : plugin_(std::move(plugin)),
      callback_(std::move(callback)),
      crash_message_prefix_(absl::StrCat("roboloop: ", plugin_, " crashed in its ", callback_, ": signal ")) {}

const PluginCallSite* NewPluginCallSite(std::string plugin, std::string callback) {
  static std::mutex mutex;
  static auto* sites = new std::deque<PluginCallSite>;  // never destroyed: see PluginCallSite
  std::lock_guard<std::mutex> lock(mutex);
  return &sites->emplace_back(std::move(plugin), std::move(callback));
}

absl::Status SetPluginCallTimeout(double seconds, std::string source) {
  ROBOLOOP_ASSIGN_OR_RETURN(const int64_t limit_ns, CallLimitNs(seconds, source, absl::StrCat(seconds)));
  call_limit_override.store(new CallLimitOverride{limit_ns, std::move(source)});
  return absl::OkStatus();
}

absl::Status StartPluginCallGuard() {
  ROBOLOOP_RETURN_IF_ERROR(ChooseCallLimit());
  static std::once_flag started;
  std::call_once(started, [] {
    InstallCrashHandler();
    std::thread(WatchPluginCalls).detach();
  });
  return absl::OkStatus();
}

ScopedPluginCall::ScopedPluginCall(const PluginCallSite* site) {
  if (this_thread_slot == nullptr) this_thread_slot = ClaimSlot();
  this_thread_slot->site.store(site, std::memory_order_release);
  CountCallEdge(this_thread_slot);
}

ScopedPluginCall::~ScopedPluginCall() { CountCallEdge(this_thread_slot); }

}  // namespace roboloop::sim
