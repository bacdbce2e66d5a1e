// RunInChildProcess: the child's value and status come back; a crash, an early exit and an endless
// loop in the child become the caller's errors, naming what ran.
#include "common/child_process_call.h"

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace roboloop {
namespace {

using ::testing::HasSubstr;

TEST(ChildProcessCallTest, ReturnsTheChildsValue) {
  const std::string big(1 << 20, 'x');  // larger than a pipe's buffer
  auto result = RunInChildProcess({"echo", absl::Seconds(30)}, [&] { return big + "!"; });
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->ok()) << result->status();
  EXPECT_EQ(**result, big + "!");
}

TEST(ChildProcessCallTest, ReturnsTheChildsStatusWithItsCodeAndMessage) {
  auto result = RunInChildProcess({"check"}, []() -> absl::StatusOr<std::string> {
    return absl::InvalidArgumentError("f.hdf5: data: no demos");
  });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->status(), absl::InvalidArgumentError("f.hdf5: data: no demos"));
}

TEST(ChildProcessCallTest, TheChildsMemoryIsItsOwn) {
  int counter = 0;
  auto result = RunInChildProcess({"count"}, [&] {
    ++counter;
    return std::to_string(counter);
  });
  ASSERT_TRUE(result.ok() && result->ok());
  EXPECT_EQ(**result, "1");
  EXPECT_EQ(counter, 0);
}

TEST(ChildProcessCallTest, AChildThatNeverAnswersIsStoppedAtTheTimeLimit) {
  const absl::Time start = absl::Now();
  auto result = RunInChildProcess({"f.hdf5: validation", absl::Milliseconds(300)}, []() -> absl::StatusOr<std::string> {
    while (true) ::pause();
  });
  EXPECT_EQ(result.status(),
            absl::DeadlineExceededError("f.hdf5: validation did not finish within 300ms and was stopped"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));
}

TEST(ChildProcessCallTest, ACrashNamesTheSignal) {
  auto result = RunInChildProcess({"f.hdf5: validation"}, []() -> absl::StatusOr<std::string> { std::abort(); });
  EXPECT_TRUE(absl::IsAborted(result.status())) << result.status();
  EXPECT_EQ(result.status().message(), "f.hdf5: validation crashed: its process died of signal 6 (Aborted)");
}

TEST(ChildProcessCallTest, AnExitWithoutAnswerNamesTheExitCode) {
  auto result = RunInChildProcess({"work"}, []() -> absl::StatusOr<std::string> { ::_exit(3); });
  EXPECT_EQ(result.status(), absl::AbortedError("work ended without an answer: its process exited with code 3"));
}

TEST(ChildProcessCallTest, AProgramsExitCodeAndStderrComeBack) {
  auto end = RunProgramInChildProcess({"sh"}, {"/bin/sh", "-c", "echo out; echo oops >&2; exit 3"});
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(end->exit_code, 3);
  EXPECT_EQ(end->err, "oops\n");
  auto missing = RunProgramInChildProcess({"missing"}, {"/nonexistent/program"});
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_EQ(missing->exit_code, 127);
}

TEST(ChildProcessCallTest, AProgramsCrashAndTimeLimitAreErrors) {
  auto crashed = RunProgramInChildProcess({"check"}, {"/bin/sh", "-c", "kill -SEGV $$"});
  EXPECT_EQ(crashed.status(), absl::AbortedError("check crashed: its process died of signal 11 (Segmentation fault)"));
  auto stuck = RunProgramInChildProcess({"check", absl::Milliseconds(300)}, {"/bin/sleep", "30"});
  EXPECT_EQ(stuck.status(), absl::DeadlineExceededError("check did not finish within 300ms and was stopped"));
}

// Whether process `pid` has ended (gone, or a zombie that its new parent has not reaped yet).
bool ProcessEnded(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t name_end = text.rfind(')');
  return name_end == std::string::npos || text.substr(name_end + 2, 1) == "Z";
}

TEST(ChildProcessCallTest, AChildEndsWhenItsCallerIsKilled) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t caller = ::fork();
  ASSERT_GE(caller, 0);
  if (caller == 0) {
    (void)RunInChildProcess({"spin"}, [&]() -> absl::StatusOr<std::string> {
      const pid_t self = ::getpid();
      (void)!::write(fds[1], &self, sizeof(self));
      while (true) ::pause();
    });
    ::_exit(0);
  }
  pid_t child = 0;
  ASSERT_EQ(::read(fds[0], &child, sizeof(child)), static_cast<ssize_t>(sizeof(child)));
  ::close(fds[0]);
  ::close(fds[1]);
  ASSERT_FALSE(ProcessEnded(child));
  ::kill(caller, SIGKILL);
  ::waitpid(caller, nullptr, 0);
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (!ProcessEnded(child) && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_TRUE(ProcessEnded(child)) << "child " << child << " outlived its killed caller";
  if (!ProcessEnded(child)) ::kill(child, SIGKILL);
}

}  // namespace
}  // namespace roboloop
