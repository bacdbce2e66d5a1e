// The worker pool: every index of a loop runs once, and a started loop runs on the workers
// while the caller does other work (the rollout engine's overlap of inference and physics).
#include "sim/worker_pool.h"

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace roboloop::sim {
namespace {

std::unique_ptr<WorkerPool> Pool(int threads) {
  auto pool = WorkerPool::Create({threads});
  EXPECT_TRUE(pool.ok()) << pool.status();
  return pool.ok() ? std::move(*pool) : nullptr;
}

TEST(WorkerPoolTest, ParallelForRunsEveryIndexOnce) {
  for (int threads : {1, 2, 4}) {
    auto pool = Pool(threads);
    ASSERT_NE(pool, nullptr);
    for (int n : {0, 1, 2, 97}) {
      std::vector<std::atomic<int>> runs(n);
      auto count = [&runs](int i) { runs[i].fetch_add(1); };
      pool->ParallelFor(n, count);
      for (int i = 0; i < n; ++i) EXPECT_EQ(runs[i].load(), 1) << threads << " threads, n " << n;
    }
  }
}

TEST(WorkerPoolTest, StartedLoopRunsOnWorkersWhileTheCallerWaitsElsewhere) {
  auto pool = Pool(2);
  ASSERT_NE(pool, nullptr);
  std::atomic<int> done{0};
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> on_caller{false};
  auto work = [&](int) {
    if (std::this_thread::get_id() == caller) on_caller = true;
    done.fetch_add(1);
  };
  pool->Start(64, work);
  // The caller does not help until Finish: the worker alone must get through the loop.
  while (done.load() < 64) std::this_thread::yield();
  pool->Finish();
  EXPECT_EQ(done.load(), 64);
  EXPECT_FALSE(on_caller.load());
}

TEST(WorkerPoolTest, WithoutWorkersAStartedLoopRunsInFinish) {
  auto pool = Pool(1);
  ASSERT_NE(pool, nullptr);
  int done = 0;
  auto work = [&done](int) { ++done; };
  pool->Start(5, work);
  EXPECT_EQ(done, 0);
  pool->Finish();
  EXPECT_EQ(done, 5);
  pool->Finish();
  EXPECT_EQ(done, 5);
  EXPECT_EQ(WorkerPool::Create({0}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(WorkerPoolTest, ALoopBodyLearnsWhichThreadRunsIt) {
  auto pool = Pool(3);
  ASSERT_NE(pool, nullptr);
  std::mutex mu;
  std::map<int, std::set<std::thread::id>> ids_by_thread;
  auto work = [&](int, int thread) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    std::lock_guard<std::mutex> lock(mu);
    ids_by_thread[thread].insert(std::this_thread::get_id());
  };
  pool->ParallelFor(300, work);
  ASSERT_FALSE(ids_by_thread.empty());
  for (const auto& [thread, ids] : ids_by_thread) {
    EXPECT_GE(thread, 0);
    EXPECT_LT(thread, 3);
    EXPECT_EQ(ids.size(), 1u) << "thread index " << thread << " names one thread";
  }
  ASSERT_EQ(ids_by_thread.count(0), 1u) << "the caller helps through 60 ms of work";
  EXPECT_EQ(ids_by_thread[0], std::set<std::thread::id>{std::this_thread::get_id()}) << "0 is the caller";
}

}  // namespace
}  // namespace roboloop::sim
