// SIGINT/SIGTERM as a cancellation (issue 27): a signal cancels the token with its name as
// the reason, and the previous handlers come back when the SignalCancellation goes.
#include "common/signal_cancellation.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <thread>

namespace roboloop::common {
namespace {

bool WaitForCancel(const CancellationToken& token) {
  for (int i = 0; i < 500 && !token.IsCancelled(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return token.IsCancelled();
}

TEST(SignalCancellationTest, SigintCancelsTheToken) {
  CancellationToken token;
  auto signals = SignalCancellation::Create(&token);
  ASSERT_TRUE(signals.ok()) << signals.status();
  EXPECT_FALSE(token.IsCancelled());
  std::raise(SIGINT);
  ASSERT_TRUE(WaitForCancel(token));
  EXPECT_EQ(token.Reason(), "received SIGINT");
}

TEST(SignalCancellationTest, SigtermCancelsTheToken) {
  CancellationToken token;
  auto signals = SignalCancellation::Create(&token);
  ASSERT_TRUE(signals.ok()) << signals.status();
  std::raise(SIGTERM);
  ASSERT_TRUE(WaitForCancel(token));
  EXPECT_EQ(token.Reason(), "received SIGTERM");
}

TEST(SignalCancellationTest, ThePreviousHandlersAreRestored) {
  std::signal(SIGINT, SIG_IGN);
  CancellationToken token;
  {
    auto signals = SignalCancellation::Create(&token);
    ASSERT_TRUE(signals.ok()) << signals.status();
    struct sigaction installed {};
    sigaction(SIGINT, nullptr, &installed);
    EXPECT_NE(installed.sa_handler, SIG_IGN);
  }
  struct sigaction restored {};
  sigaction(SIGINT, nullptr, &restored);
  EXPECT_EQ(restored.sa_handler, SIG_IGN);
  std::raise(SIGINT);  // ignored: neither kills the test nor reaches the token
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(token.IsCancelled());
  std::signal(SIGINT, SIG_DFL);
}

}  // namespace
}  // namespace roboloop::common
