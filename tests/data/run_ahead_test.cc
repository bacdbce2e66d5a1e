// RunAhead (data/run_ahead.h): items in order, one ahead at most, errors end the sequence, and
// destruction while items remain stops the producer.
#include "data/run_ahead.h"

#include <atomic>

#include "gtest/gtest.h"

namespace roboloop::data {
namespace {

TEST(RunAheadTest, HandsOverEveryItemInOrderThenNullopt) {
  std::atomic<int> produced{0};
  std::atomic<int> most_ahead{0};
  std::atomic<int> taken{0};
  RunAhead<int> items([&]() -> absl::StatusOr<std::optional<int>> {
    const int next = produced;
    if (next == 50) return std::optional<int>();
    most_ahead = std::max<int>(most_ahead, next - taken);
    ++produced;
    return std::optional<int>(next * 3);
  });
  for (int i = 0; i < 50; ++i) {
    auto item = items.Next();
    ASSERT_TRUE(item.ok() && item->has_value()) << i;
    EXPECT_EQ(**item, i * 3);
    ++taken;
  }
  auto end = items.Next();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());
  EXPECT_FALSE(items.Next()->has_value());
  EXPECT_EQ(produced, 50);
  EXPECT_LE(most_ahead, 1);  // item k + 1 starts only once item k is taken
}

TEST(RunAheadTest, AnErrorEndsTheSequence) {
  int calls = 0;
  RunAhead<int> items([&]() -> absl::StatusOr<std::optional<int>> {
    if (++calls == 3) return absl::DataLossError("video.mp4: corrupt frame");
    return std::optional<int>(calls);
  });
  EXPECT_EQ(**items.Next(), 1);
  EXPECT_EQ(**items.Next(), 2);
  EXPECT_EQ(items.Next().status().message(), "video.mp4: corrupt frame");
  EXPECT_EQ(items.Next().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(calls, 3);
}

TEST(RunAheadTest, DestroyedEarlyProducesNoMore) {
  std::atomic<int> calls{0};
  {
    RunAhead<int> items([&]() -> absl::StatusOr<std::optional<int>> { return std::optional<int>(++calls); });
    EXPECT_EQ(**items.Next(), 1);
  }
  EXPECT_LE(calls, 2);  // item 2 may have been under way, nothing after it
}

}  // namespace
}  // namespace roboloop::data
