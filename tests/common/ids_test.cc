#include "common/ids.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regex>
#include <set>

namespace roboloop {
namespace {

TEST(Ids, UuidIsVersion4AndUnique) {
  std::regex shape("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string id = NewUuid();
    EXPECT_TRUE(std::regex_match(id, shape)) << id;
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(Ids, FormatTimeUtc) {
  EXPECT_EQ(FormatTimeUtc(0), "1970-01-01T00:00:00.000000Z");
  EXPECT_EQ(FormatTimeUtc(1714564800000042), "2024-05-01T12:00:00.000042Z");
  EXPECT_EQ(FormatTimeUtc(-1), "1969-12-31T23:59:59.999999Z");
}

TEST(Ids, NowIsRecentAndMonotoneEnough) {
  int64_t a = NowUnixMicros();
  int64_t b = NowUnixMicros();
  EXPECT_GT(a, 1700000000000000);
  EXPECT_GE(b, a);
}

TEST(Ids, UserAndHostAreNonEmpty) {
  EXPECT_FALSE(CurrentUser().empty());
  EXPECT_FALSE(HostName().empty());
}

// The pid of a child that has exited and been reaped.
int64_t PidOfAnExitedChild() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  return child;
}

TEST(Ids, ThisProcessRunsAndAnExitedChildIsGone) {
  const ProcessIdentity self = CurrentProcess();
  EXPECT_EQ(self.pid, getpid());
  EXPECT_GT(self.start_ticks, 0);
  EXPECT_EQ(self.host, HostName());
  EXPECT_FALSE(ProcessIsGone(self));
  EXPECT_TRUE(ProcessIsGone(ProcessIdentity{PidOfAnExitedChild(), 0, HostName()}));
}

TEST(Ids, AnExitedChildNotYetReapedIsGone) {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, child, &info, WEXITED | WNOWAIT), 0) << "waits for the exit, leaves the zombie";
  EXPECT_TRUE(ProcessIsGone(ProcessIdentity{child, 0, HostName()}));
  int status = 0;
  waitpid(child, &status, 0);
}

TEST(Ids, APidTakenByAProcessThatStartedAtAnotherTimeIsGone) {
  ProcessIdentity earlier = CurrentProcess();
  earlier.start_ticks -= 1;
  EXPECT_TRUE(ProcessIsGone(earlier)) << "the pid was reused";
}

TEST(Ids, AProcessOfAnotherHostOrWithoutPidIsNotJudged) {
  EXPECT_FALSE(ProcessIsGone(ProcessIdentity{PidOfAnExitedChild(), 0, HostName() + "-elsewhere"}));
  EXPECT_FALSE(ProcessIsGone(ProcessIdentity{0, 0, HostName()}));
}

}  // namespace
}  // namespace roboloop
