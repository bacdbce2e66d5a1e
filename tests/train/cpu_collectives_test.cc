// CPU collectives on Debian's Gloo (docs/training.md, "CPU collectives"): two ranks in one process
// sum and broadcast bitwise; the Gloo code that runs is Debian's libgloo even though this program
// links libtorch_cpu.so, whose own Gloo copy defines the same symbols in the global scope; a rank
// whose peer never comes fails within its timeout, naming the ranks.
#include <dlfcn.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/sanitizers.h"
#include "train/gloo/cpu_collectives.h"

namespace roboloop::train {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The job's store for ranks that are threads of one process (the product uses c10d's TCPStore).
class InProcessStore : public RendezvousStore {
 public:
  void Set(const std::string& key, const std::vector<char>& value) override {
    std::lock_guard<std::mutex> lock(mutex_);
    values_[key] = value;
    changed_.notify_all();
  }
  std::vector<char> Get(const std::string& key) override {
    Wait({key}, std::chrono::seconds(10));
    std::lock_guard<std::mutex> lock(mutex_);
    return values_.at(key);
  }
  void Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lock(mutex_);
    const bool all_there = changed_.wait_for(lock, timeout, [&] {
      for (const std::string& key : keys) {
        if (values_.count(key) == 0) return false;
      }
      return true;
    });
    if (!all_there) throw std::runtime_error("store: keys did not appear in time");
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::vector<char>> values_;
};

CpuCollectivesOptions RankOptions(int rank, int size, std::chrono::milliseconds timeout) {
  CpuCollectivesOptions options;
  options.rank = rank;
  options.size = size;
  options.hostname = "127.0.0.1";
  options.timeout = timeout;
  return options;
}

// Connects `size` ranks on threads and runs `body(rank, collectives)` on each.
template <typename Body>
void RunRanks(int size, Body body) {
  InProcessStore store;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      auto collectives =
          ConnectCpuCollectives(RankOptions(rank, size, std::chrono::seconds(20)), store);
      body(rank, *collectives);
    });
  }
  for (std::thread& thread : threads) thread.join();
}

TEST(CpuCollectivesTest, TwoRanksSumAndBroadcastBitwise) {
  if (roboloop::testing::kAddressSanitizer) GTEST_SKIP() << roboloop::testing::kNoDeepBindUnderAsan;
  std::vector<float> floats[2];
  std::vector<double> doubles[2];
  std::string texts[2];
  RunRanks(2, [&](int rank, CpuCollectives& collectives) {
    floats[rank] = {0.1f * (rank + 1), -3.0f, 1e-8f * rank};
    collectives.AllReduceSum(floats[rank].data(), floats[rank].size());
    doubles[rank] = {0.25 + rank, 1e300};
    collectives.AllReduceSum(doubles[rank].data(), doubles[rank].size());
    texts[rank] = rank == 0 ? "from rank zero" : "overwritten!!!";
    collectives.Broadcast(texts[rank].data(), texts[rank].size(), /*root=*/0);
  });
  const std::vector<float> expected_floats = {0.1f + 0.2f, -6.0f, 1e-8f};
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(floats[rank], expected_floats) << "rank " << rank;
    EXPECT_EQ(doubles[rank], (std::vector<double>{0.25 + 1.25, 2e300})) << "rank " << rank;
    EXPECT_EQ(texts[rank], "from rank zero") << "rank " << rank;
  }
}

TEST(CpuCollectivesTest, GlooCodeComesFromDebiansLibglooNotLibTorchsCopy) {
  if (roboloop::testing::kAddressSanitizer) GTEST_SKIP() << roboloop::testing::kNoDeepBindUnderAsan;
  // The hard case is real: libtorch_cpu.so is in this program's global scope and defines Gloo.
  void* torch_allreduce = dlsym(RTLD_DEFAULT, "_ZN4gloo9allreduceERKNS_16AllreduceOptionsE");
  ASSERT_NE(torch_allreduce, nullptr);
  Dl_info torch_info{};
  ASSERT_NE(dladdr(torch_allreduce, &torch_info), 0);
  ASSERT_THAT(torch_info.dli_fname, HasSubstr("libtorch_cpu.so"));

  std::string path;
  RunRanks(1, [&](int, CpuCollectives& collectives) { path = collectives.GlooLibraryPath(); });
  EXPECT_THAT(path, HasSubstr("libgloo.so"));
  EXPECT_THAT(path, Not(HasSubstr("torch")));
}

TEST(CpuCollectivesTest, APeerThatNeverComesIsAnErrorWithinTheTimeout) {
  if (roboloop::testing::kAddressSanitizer) GTEST_SKIP() << roboloop::testing::kNoDeepBindUnderAsan;
  InProcessStore store;
  const auto start = std::chrono::steady_clock::now();
  try {
    ConnectCpuCollectives(RankOptions(0, 2, std::chrono::seconds(2)), store);
    FAIL() << "connected without its peer";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("rank 0 of 2 could not connect"));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

}  // namespace
}  // namespace roboloop::train
