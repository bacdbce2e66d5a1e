// Guards roboloop's calls into task plug-ins (sim/task_plugin_abi.h), so that a plug-in that
// crashes or hangs says so instead of taking the process down silently:
// - a crash signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) raised while a plug-in call is in
//   progress on the crashing thread writes which plug-in crashed, in which callback, with which
//   signal, then the process dies of that signal (default action); a crash anywhere else goes to
//   the handler installed before roboloop's (a sanitizer's, or the default);
// - a watchdog thread ends the process (exit status kPluginCallTimeoutExitCode) with a message
//   naming the plug-in, the callback and the limit when one call runs longer than the limit
//   (seconds, 0 = no limit): SetPluginCallTimeout's (a command's --plugin-call-timeout), else
//   $ROBOLOOP_PLUGIN_CALL_TIMEOUT_S, else 60. A thread cannot be cancelled safely, so a hung call
//   ends the process; before it exits the watchdog flushes stdio (what the process printed but had
//   not written yet), giving up after a second when the flush blocks (the hung thread may hold
//   stdout's lock).
// A guarded call costs a thread-local load and three stores, no clock read: the watchdog, which
// looks every quarter of the limit (at most every second), times the calls it sees in progress.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace roboloop::sim {

// The exit status of a process whose plug-in call exceeded its time limit (timeout(1)'s).
inline constexpr int kPluginCallTimeoutExitCode = 124;

// The environment variable that sets the per-call time limit.
inline constexpr char kPluginCallTimeoutVariable[] = "ROBOLOOP_PLUGIN_CALL_TIMEOUT_S";

// One callback of one plug-in, as messages about its calls name it. Sites are referenced by
// in-flight calls and by the watchdog, so they must live as long as the process (as the
// plug-in libraries do): make them with NewPluginCallSite.
class PluginCallSite {
 public:
  // `plugin` names the plug-in ("task plug-in T (library L)"), `callback` the callback
  // ("observe").
  PluginCallSite(std::string plugin, std::string callback);

  const std::string& plugin() const { return plugin_; }
  const std::string& callback() const { return callback_; }
  // What the crash handler writes before the signal's name (preformatted: the handler may only
  // write(2)).
  const std::string& crash_message_prefix() const { return crash_message_prefix_; }

 private:
  std::string plugin_;
  std::string callback_;
  std::string crash_message_prefix_;
};

// A site that lives for the rest of the process. Thread-safe.
const PluginCallSite* NewPluginCallSite(std::string plugin, std::string callback);

// Sets the call limit of this process to `seconds` (0 = no limit), over
// $ROBOLOOP_PLUGIN_CALL_TIMEOUT_S, which is then not read; `source` names the setting in errors and
// in the watchdog's message (e.g. "--plugin-call-timeout"). InvalidArgument naming `source` and
// the value when it is not a number of seconds >= 0. Takes effect at the next
// StartPluginCallGuard. Thread-safe.
absl::Status SetPluginCallTimeout(double seconds, std::string source);

// Takes the call limit from SetPluginCallTimeout or else from $ROBOLOOP_PLUGIN_CALL_TIMEOUT_S
// (InvalidArgument naming the variable and its value when it is not a number of seconds >= 0;
// unset: 60 s) and, the first time, installs the crash handler and starts the watchdog. Call
// before the first call into a plug-in. Thread-safe.
absl::Status StartPluginCallGuard();

// Marks a call into `site` as in progress on this thread for the object's lifetime (also when
// the call unwinds by an exception). `site` must come from NewPluginCallSite.
class ScopedPluginCall {
 public:
  explicit ScopedPluginCall(const PluginCallSite* site);
  ~ScopedPluginCall();
  ScopedPluginCall(const ScopedPluginCall&) = delete;
  ScopedPluginCall& operator=(const ScopedPluginCall&) = delete;
};

}  // namespace roboloop::sim
