#include "common/cancellation.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace roboloop::common {
namespace {

TEST(CancellationTokenTest, CancelRunsCallbacksOnceInRegistrationOrder) {
  CancellationToken token;
  std::vector<int> calls;
  CancellationCallback first = token.OnCancel([&] { calls.push_back(1); });
  CancellationCallback second = token.OnCancel([&] { calls.push_back(2); });
  EXPECT_FALSE(token.IsCancelled());
  token.Cancel("stop");
  token.Cancel("again");
  EXPECT_TRUE(token.IsCancelled());
  EXPECT_EQ(token.Reason(), "stop");
  EXPECT_EQ(calls, (std::vector<int>{1, 2}));
}

TEST(CancellationTokenTest, CallbackRegisteredAfterCancelRunsAtOnce) {
  CancellationToken token;
  token.Cancel();
  bool ran = false;
  CancellationCallback registration = token.OnCancel([&] { ran = true; });
  EXPECT_TRUE(ran);
}

TEST(CancellationTokenTest, DestroyedRegistrationDoesNotRun) {
  CancellationToken token;
  bool ran = false;
  { CancellationCallback registration = token.OnCancel([&] { ran = true; }); }
  token.Cancel();
  EXPECT_FALSE(ran);
}

TEST(CancellationTokenTest, ChildFollowsParentButNotTheOtherWay) {
  CancellationToken parent, child, other_child;
  CancellationCallback link = child.LinkTo(&parent);
  CancellationCallback other_link = other_child.LinkTo(&parent);
  other_child.Cancel("alone");
  EXPECT_FALSE(parent.IsCancelled());
  EXPECT_FALSE(child.IsCancelled());
  parent.Cancel("run cancelled");
  EXPECT_TRUE(child.IsCancelled());
  EXPECT_EQ(child.Reason(), "run cancelled");
  EXPECT_EQ(other_child.Reason(), "alone");
}

TEST(CancellationTokenTest, UnregisteringWaitsForACallbackRunningOnAnotherThread) {
  CancellationToken token;
  std::atomic<bool> started{false}, finished{false};
  auto registration = std::make_unique<CancellationCallback>(token.OnCancel([&] {
    started = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    finished = true;
  }));
  std::thread canceller([&] { token.Cancel(); });
  while (!started) std::this_thread::yield();
  registration.reset();
  EXPECT_TRUE(finished);
  canceller.join();
}

TEST(CancellationTokenTest, NullTokenIsNeverCancelled) {
  EXPECT_FALSE(IsCancelled(nullptr));
  CancellationToken token;
  token.Cancel();
  EXPECT_TRUE(IsCancelled(&token));
}

TEST(CancellationTokenTest, SleepEndsEarlyWhenCancelled) {
  CancellationToken token;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    token.Cancel();
  });
  const absl::Time start = absl::Now();
  EXPECT_FALSE(SleepUnlessCancelled(&token, absl::Seconds(30)));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  canceller.join();
  CancellationToken idle;
  EXPECT_TRUE(SleepUnlessCancelled(&idle, absl::Milliseconds(1)));
}

}  // namespace
}  // namespace roboloop::common
