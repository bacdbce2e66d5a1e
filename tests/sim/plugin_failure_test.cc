// Task plug-ins that crash or hang (sim/plugin_call_guard.h), each run by `roboloop sim rollout`
// in a child process: a crash in a callback is named (plug-in, library, callback, signal) on
// stderr before the process dies of that same signal; a callback that never returns ends the
// process with a message and exit status 124 once the limit (--plugin-call-timeout, else
// ROBOLOOP_PLUGIN_CALL_TIMEOUT_S) has passed, what the process printed still written to stdout unless
// the hung call holds stdout's lock. A crash outside plug-in code, in a forked child that loaded a
// plug-in, keeps its usual end.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/task_plugin.h"
#include "tests/sim/plugin_build.h"
#include "tests/util/subprocess.h"

extern char** environ;

namespace roboloop::sim {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::BuildTestPlugin;

constexpr auto kChildDeadline = std::chrono::seconds(60);

// How a child process ended.
struct ChildEnd {
  bool signalled = false;  // killed by a signal (then `signal`), else it exited (`exit_code`)
  int signal = 0;
  int exit_code = -1;
  std::string out;         // its stdout
  std::string err;         // its stderr
  double seconds = 0.0;    // from start to end
};

// Waits for `pid` until kChildDeadline (then kills it and fails the test).
int WaitWithDeadline(pid_t pid, std::chrono::steady_clock::time_point start) {
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() - start > kChildDeadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      ADD_FAILURE() << "the rollout did not end within " << kChildDeadline.count() << " s";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return status;
}

// Forks a child that runs `body` (which must not return: it execs or _exits) with stdout in
// `<files>.stdout`, stderr in `<files>.stderr` and no core dumps; returns how it ended.
ChildEnd RunInChild(const std::string& files, const std::function<void()>& body) {
  const std::string out_path = files + ".stdout", err_path = files + ".stderr";
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    dup2(open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), STDERR_FILENO);
    dup2(open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), STDOUT_FILENO);
    body();
    _exit(127);
  }
  ChildEnd end;
  if (pid < 0) {
    ADD_FAILURE() << "fork failed";
    return end;
  }
  const int status = WaitWithDeadline(pid, start);
  end.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  end.signalled = WIFSIGNALED(status);
  end.signal = end.signalled ? WTERMSIG(status) : 0;
  end.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  end.out = roboloop::testing::ReadWholeFile(out_path);
  end.err = roboloop::testing::ReadWholeFile(err_path);
  return end;
}

// Runs `roboloop sim rollout` of the test plug-in `plugin` (random policy, 2 episodes) with the
// extra environment entries `env` and the extra arguments `extra_args`; returns how it ended.
ChildEnd RollOutInChild(const std::string& plugin, const std::vector<std::string>& env = {},
                        const std::vector<std::string>& extra_args = {}) {
  std::vector<std::string> args = {roboloop::testing::RoboloopBinary(), "sim", "rollout", "--task-plugin", plugin,
                                   "--task", "test-plugin", "--policy", "random", "--episodes", "2"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_entries(env);
  std::vector<char*> envp;
  for (char** entry = environ; *entry != nullptr; ++entry) envp.push_back(*entry);
  for (std::string& entry : env_entries) envp.push_back(entry.data());
  envp.push_back(nullptr);
  return RunInChild(plugin, [&] { execve(argv[0], argv.data(), envp.data()); });
}

// Loads `plugin` in this (forked, so fresh) process, installing the guard, then crashes outside
// any plug-in call.
[[noreturn]] void LoadPluginThenCrashInRoboloop(const std::string& plugin) {
  TaskRegistry registry;
  if (!LoadTaskPlugin(plugin, &registry).ok()) _exit(3);
  raise(SIGSEGV);
  _exit(4);
}

void ExitWithFortyTwo(int) { _exit(42); }

TEST(PluginFailureTest, ASegfaultInACallbackNamesThePluginCallbackAndSignalThenKillsTheProcessWithIt) {
  const std::string plugin = BuildTestPlugin("segfault", "-DSEGFAULT_IN_REWARD");
  const ChildEnd end = RollOutInChild(plugin);
  EXPECT_TRUE(end.signalled) << "exit " << end.exit_code << ": " << end.err;
  EXPECT_EQ(end.signal, SIGSEGV) << end.err;
  EXPECT_THAT(end.err, HasSubstr("roboloop: task plug-in test-plugin (library " + plugin +
                                 ") crashed in its reward callback: signal SIGSEGV (invalid memory access); "
                                 "the process dies of that signal\n"));
}

TEST(PluginFailureTest, AnAbortInResetNamesThePluginCallbackAndSignalThenKillsTheProcessWithIt) {
  const std::string plugin = BuildTestPlugin("abort", "-DABORT_IN_RESET");
  const ChildEnd end = RollOutInChild(plugin);
  EXPECT_TRUE(end.signalled) << "exit " << end.exit_code << ": " << end.err;
  EXPECT_EQ(end.signal, SIGABRT) << end.err;
  EXPECT_THAT(end.err, HasSubstr("roboloop: task plug-in test-plugin (library " + plugin +
                                 ") crashed in its reset callback: signal SIGABRT (abort)"));
}

TEST(PluginFailureTest, ACrashInTheEntryPointNamesTheLibrary) {
  const std::string plugin = BuildTestPlugin("abort_entry", "-DABORT_IN_ENTRY");
  const ChildEnd end = RollOutInChild(plugin);
  EXPECT_TRUE(end.signalled) << "exit " << end.exit_code << ": " << end.err;
  EXPECT_EQ(end.signal, SIGABRT) << end.err;
  EXPECT_THAT(end.err, HasSubstr("roboloop: task plug-in library " + plugin +
                                 " crashed in its entry point: signal SIGABRT (abort)"));
}

TEST(PluginFailureTest, AStackOverflowInACallbackIsNamedToo) {
  const std::string plugin = BuildTestPlugin("stack_overflow", "-DSTACK_OVERFLOW_IN_SUCCESS");
  const ChildEnd end = RollOutInChild(plugin);
  EXPECT_TRUE(end.signalled) << "exit " << end.exit_code << ": " << end.err;
  EXPECT_EQ(end.signal, SIGSEGV) << end.err;
  EXPECT_THAT(end.err, HasSubstr("roboloop: task plug-in test-plugin (library " + plugin +
                                 ") crashed in its success_condition callback: signal SIGSEGV"));
}

TEST(PluginFailureTest, ACrashOutsidePluginsKeepsTheDefaultAction) {
  const std::string plugin = BuildTestPlugin("outside_default");
  const ChildEnd end = RunInChild(plugin, [&] { LoadPluginThenCrashInRoboloop(plugin); });
  EXPECT_TRUE(end.signalled) << "exit " << end.exit_code << ": " << end.err;
  EXPECT_EQ(end.signal, SIGSEGV) << end.err;
  EXPECT_THAT(end.err, Not(HasSubstr("plug-in"))) << "no plug-in was running";
}

TEST(PluginFailureTest, ACrashOutsidePluginsGoesToTheHandlerInstalledBefore) {
  const std::string plugin = BuildTestPlugin("outside_chained");
  const ChildEnd end = RunInChild(plugin, [&] {
    struct sigaction previous {};
    previous.sa_handler = ExitWithFortyTwo;
    sigemptyset(&previous.sa_mask);
    sigaction(SIGSEGV, &previous, nullptr);
    LoadPluginThenCrashInRoboloop(plugin);
  });
  EXPECT_FALSE(end.signalled) << "signal " << end.signal << ": " << end.err;
  EXPECT_EQ(end.exit_code, 42) << "the earlier handler (a sanitizer's, say) handles it: " << end.err;
  EXPECT_THAT(end.err, Not(HasSubstr("plug-in")));
}

TEST(PluginFailureTest, ACallbackThatNeverReturnsEndsTheProcessOnceTheLimitHasPassed) {
  const std::string plugin = BuildTestPlugin("hang", "-DHANG_IN_OBSERVE");
  const ChildEnd end = RollOutInChild(plugin, {"ROBOLOOP_PLUGIN_CALL_TIMEOUT_S=0.3"});
  EXPECT_FALSE(end.signalled) << "signal " << end.signal << ": " << end.err;
  EXPECT_EQ(end.exit_code, 124) << end.err;
  EXPECT_THAT(end.err, HasSubstr("roboloop: task plug-in test-plugin (library " + plugin +
                                 ") has not returned from its observe callback within the limit of 0.3 s "
                                 "(ROBOLOOP_PLUGIN_CALL_TIMEOUT_S); a hung call cannot be cancelled, so the "
                                 "process exits\n"));
  EXPECT_LT(end.seconds, 30.0) << "the watchdog ends the process soon after the limit";
}

// What the process printed but had not yet written (here the plug-in's own text, without a
// newline, on line-buffered stdout) is flushed before the watchdog ends the process.
TEST(PluginFailureTest, AHungCallEndsTheProcessWithWhatItPrintedWritten) {
  const std::string plugin =
      BuildTestPlugin("hang_printed", "-DHANG_IN_OBSERVE -DPRINT_BEFORE_HANG='\"printed before the hang\"'");
  const ChildEnd end = RollOutInChild(plugin, {"ROBOLOOP_PLUGIN_CALL_TIMEOUT_S=0.3"});
  EXPECT_EQ(end.exit_code, 124) << end.err;
  EXPECT_THAT(end.out, HasSubstr("printed before the hang"));
}

// A hung call that holds stdout's lock cannot have stdout flushed: the watchdog gives up waiting
// for the flush and still ends the process, soon, with its message.
TEST(PluginFailureTest, AHungCallHoldingStdoutsLockStillEndsTheProcess) {
  const std::string plugin = BuildTestPlugin(
      "hang_locked", "-DHANG_IN_OBSERVE -DLOCK_STDOUT_IN_HANG -DPRINT_BEFORE_HANG='\"printed before the hang\"'");
  const ChildEnd end = RollOutInChild(plugin, {"ROBOLOOP_PLUGIN_CALL_TIMEOUT_S=0.3"});
  EXPECT_FALSE(end.signalled) << "signal " << end.signal << ": " << end.err;
  EXPECT_EQ(end.exit_code, 124) << end.err;
  EXPECT_THAT(end.err, HasSubstr("has not returned from its observe callback within the limit of 0.3 s"));
  EXPECT_LT(end.seconds, 30.0) << "the flush that cannot take the lock does not hold the process";
}

// --plugin-call-timeout sets the limit where the plug-in is given, over the environment variable.
TEST(PluginFailureTest, TheCommandsFlagSetsTheLimitOverTheEnvironmentVariable) {
  const std::string plugin = BuildTestPlugin("hang_flag", "-DHANG_IN_OBSERVE");
  const ChildEnd end =
      RollOutInChild(plugin, {"ROBOLOOP_PLUGIN_CALL_TIMEOUT_S=600"}, {"--plugin-call-timeout", "0.3"});
  EXPECT_FALSE(end.signalled) << "signal " << end.signal << ": " << end.err;
  EXPECT_EQ(end.exit_code, 124) << end.err;
  EXPECT_THAT(end.err, HasSubstr("has not returned from its observe callback within the limit of 0.3 s "
                                 "(--plugin-call-timeout); a hung call cannot be cancelled"));
  EXPECT_LT(end.seconds, 30.0) << "the flag's limit, not the variable's 600 s";
}

TEST(PluginFailureTest, AnInvalidTimeoutFlagIsAUsageErrorNamingTheFlag) {
  const std::string plugin = BuildTestPlugin("valid_flag");
  const ChildEnd end = RollOutInChild(plugin, {}, {"--plugin-call-timeout=-1"});
  EXPECT_FALSE(end.signalled) << end.err;
  EXPECT_EQ(end.exit_code, 2) << end.err;
  EXPECT_THAT(end.err, HasSubstr("--plugin-call-timeout='-1' must be the time limit of one plug-in call in "
                                 "seconds, a number >= 0 (0 = no limit)"));
}

TEST(PluginFailureTest, AWellBehavedPluginRunsToTheEndUnderTheWatchdog) {
  const std::string plugin = BuildTestPlugin("well_behaved");
  const ChildEnd end = RollOutInChild(plugin, {"ROBOLOOP_PLUGIN_CALL_TIMEOUT_S=5"});
  EXPECT_FALSE(end.signalled) << end.err;
  EXPECT_EQ(end.exit_code, 0) << end.err;
}

TEST(PluginFailureTest, AnInvalidTimeoutIsRefusedNamingTheVariable) {
  const std::string plugin = BuildTestPlugin("valid");
  const ChildEnd end = RollOutInChild(plugin, {"ROBOLOOP_PLUGIN_CALL_TIMEOUT_S=soon"});
  EXPECT_FALSE(end.signalled) << end.err;
  EXPECT_EQ(end.exit_code, 1) << end.err;
  EXPECT_THAT(end.err, HasSubstr("task plugin " + plugin +
                                 ": ROBOLOOP_PLUGIN_CALL_TIMEOUT_S='soon' must be the time limit of one plug-in "
                                 "call in seconds, a number >= 0 (0 = no limit)"));
}

}  // namespace
}  // namespace roboloop::sim
