// Gradient averaging overlapped with backward (issue 22, req 4): two Gloo ranks on the CPU, in
// threads of this process over a real TCPStore. Buckets start their sums while backward runs,
// and the averaged gradients are bitwise (g0 + g1) / 2, the result of summing every bucket after
// backward (with two ranks each element's sum is g0 + g1 in either order); a parameter without a
// gradient on a rank counts as zero there, and one without a gradient on any rank keeps none.
#include <atomic>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/torch.h>

#include "tests/util/free_port.h"
#include "tests/util/sanitizers.h"
#include "train/torch/distributed.h"

namespace roboloop::train {
namespace {

using ::testing::HasSubstr;

// The real group, counting the bucket sums that were started.
class CountingGroup : public ProcessGroup {
 public:
  explicit CountingGroup(ProcessGroup& inner) : inner_(inner) {}
  int size() const override { return inner_.size(); }
  void AllReduceSum(torch::Tensor& tensor) override { inner_.AllReduceSum(tensor); }
  std::unique_ptr<PendingCollective> StartAllReduceSum(torch::Tensor tensor) override {
    ++started;
    return inner_.StartAllReduceSum(std::move(tensor));
  }
  void BroadcastFromRankZero(torch::Tensor& tensor) override {
    inner_.BroadcastFromRankZero(tensor);
  }
  std::atomic<int> started{0};

 private:
  ProcessGroup& inner_;
};

// Parameters in module order; reversed, they fill the buckets {head, unused, rank-0-only} (under
// 1 MiB), {w2, b1} (16 MiB of the 25) and {w1} (16 MiB).
struct Model {
  torch::Tensor w1, b1, w2, head, unused, rank0_only;
  std::vector<torch::Tensor> Parameters() const { return {w1, b1, w2, head, unused, rank0_only}; }
};

Model MakeModel() {
  torch::manual_seed(7);
  Model m;
  m.w1 = (torch::randn({2048, 2048}) * 0.02).requires_grad_();
  m.b1 = torch::randn({2048}).requires_grad_();
  m.w2 = (torch::randn({2048, 2048}) * 0.02).requires_grad_();
  m.head = torch::randn({8, 2048}).requires_grad_();
  m.unused = torch::randn({8}).requires_grad_();
  m.rank0_only = torch::randn({8}).requires_grad_();
  return m;
}

// A loss on rank-specific inputs; `partial` leaves `unused` out everywhere and `rank0_only` out
// on rank 1, otherwise every parameter gets a gradient.
torch::Tensor Loss(const Model& m, int rank, bool partial) {
  torch::manual_seed(100 + rank);
  const torch::Tensor x = torch::randn({4, 2048});
  const torch::Tensor hidden = torch::tanh(torch::matmul(x, m.w1.t()) + m.b1);
  torch::Tensor out = torch::matmul(torch::matmul(hidden, m.w2.t()), m.head.t());
  if (!partial) out = out * m.unused;
  if (!partial || rank == 0) out = out + m.rank0_only;
  return out.pow(2).sum();
}

// One rank's step: its gradients before and after averaging, and the sums started while
// backward ran and in all.
struct RankResult {
  std::vector<torch::Tensor> local, averaged;
  int started_during_backward = 0;
  int started = 0;
};

RankResult RunRank(int rank, int port, bool partial) {
  DistributedOptions options;
  options.rank = rank;
  options.world_size = 2;
  options.master_port = port;
  std::unique_ptr<ProcessGroup> group = JoinProcessGroup(options);
  CountingGroup counting(*group);
  const Model model = MakeModel();
  GradientAverager averager(model.Parameters(), counting);
  Loss(model, rank, partial).backward();
  RankResult result;
  result.started_during_backward = counting.started;
  for (const torch::Tensor& p : model.Parameters()) {
    result.local.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
  }
  averager.Average();
  result.started = counting.started;
  for (const torch::Tensor& p : model.Parameters()) result.averaged.push_back(p.grad());
  return result;
}

std::vector<RankResult> RunTwoRanks(bool partial) {
  const int port = testing::FreePort();
  std::vector<RankResult> results(2);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.emplace_back([&, rank] { results[rank] = RunRank(rank, port, partial); });
  }
  for (std::thread& t : ranks) t.join();
  return results;
}

constexpr size_t kUnused = 4;  // Model::unused's index in Parameters()

// Every averaged gradient bitwise the mean of the ranks' local ones, but `unused` when no rank
// used it: then it has no gradient on either rank.
void ExpectBitwiseMeans(const std::vector<RankResult>& results, bool unused_anywhere = true) {
  const char* names[] = {"w1", "b1", "w2", "head", "unused", "rank0_only"};
  for (size_t i = 0; i < results[0].local.size(); ++i) {
    const torch::Tensor expected = (results[0].local[i] + results[1].local[i]) / 2;
    for (int rank = 0; rank < 2; ++rank) {
      if (i == kUnused && !unused_anywhere) {
        EXPECT_FALSE(results[rank].averaged[i].defined()) << "no rank used " << names[i] << ", rank " << rank;
        continue;
      }
      ASSERT_TRUE(results[rank].averaged[i].defined()) << names[i] << " on rank " << rank;
      EXPECT_TRUE(torch::equal(results[rank].averaged[i], expected))
          << names[i] << " on rank " << rank << ": max difference "
          << (results[rank].averaged[i] - expected).abs().max().item<float>();
    }
  }
}

TEST(GradientAveragerTest, BucketsStartDuringBackwardAndAverageBitwise) {
  if (roboloop::testing::kAddressSanitizer) GTEST_SKIP() << roboloop::testing::kNoDeepBindUnderAsan;
  const std::vector<RankResult> results = RunTwoRanks(/*partial=*/false);
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(results[rank].started, 3) << "rank " << rank;
    EXPECT_EQ(results[rank].started_during_backward, 3) << "rank " << rank;
  }
  ASSERT_FALSE(torch::equal(results[0].local[0], results[1].local[0]));
  ExpectBitwiseMeans(results);
}

TEST(GradientAveragerTest, MissingGradientsCountAsZeroHoldBackLaterBucketsAndNoRanksLeavesNone) {
  if (roboloop::testing::kAddressSanitizer) GTEST_SKIP() << roboloop::testing::kNoDeepBindUnderAsan;
  const std::vector<RankResult> results = RunTwoRanks(/*partial=*/true);
  for (int rank = 0; rank < 2; ++rank) {
    // The first bucket waits for `unused` until Average(); the full ones behind it wait too.
    EXPECT_EQ(results[rank].started_during_backward, 0) << "rank " << rank;
    EXPECT_EQ(results[rank].started, 3) << "rank " << rank;
  }
  ASSERT_TRUE(torch::equal(results[0].local[kUnused], torch::zeros({8})));
  ASSERT_FALSE(torch::equal(results[0].local[5], torch::zeros({8})));
  ExpectBitwiseMeans(results, /*unused_anywhere=*/false);
}

// A group that no test here reaches.
class UnreachableGroup : public ProcessGroup {
 public:
  int size() const override { return 1; }
  void AllReduceSum(torch::Tensor&) override { ADD_FAILURE() << "AllReduceSum"; }
  std::unique_ptr<PendingCollective> StartAllReduceSum(torch::Tensor) override {
    ADD_FAILURE() << "StartAllReduceSum";
    return nullptr;
  }
  void BroadcastFromRankZero(torch::Tensor&) override { ADD_FAILURE() << "Broadcast"; }
};

TEST(GradientAveragerTest, ANonLeafParameterIsAnErrorNamingIt) {
  UnreachableGroup group;
  const torch::Tensor leaf = torch::ones({2}).requires_grad_();
  try {
    GradientAverager averager({leaf, leaf * 2}, group);
    FAIL() << "accepted a non-leaf parameter";
  } catch (const c10::Error& e) {
    EXPECT_THAT(e.what_without_backtrace(), HasSubstr("parameter 1 is not a leaf tensor"));
  }
}

TEST(GradientAveragerTest, OnlyParametersThatRequireAGradientGetAHook) {
  UnreachableGroup group;
  const torch::Tensor frozen = torch::ones({2});
  const torch::Tensor trainable = torch::ones({2}).requires_grad_();
  std::unique_ptr<GradientAverager> averager;
  EXPECT_NO_THROW(averager = std::make_unique<GradientAverager>(
                      std::vector<torch::Tensor>{frozen, trainable}, group));
  EXPECT_NE(torch::autograd::impl::post_acc_grad_hooks(trainable), nullptr);
}

TEST(GradientAveragerTest, OneAveragerPerParameterAtATimeAndItsHooksGoWithIt) {
  UnreachableGroup group;
  const torch::Tensor p = torch::ones({2}).requires_grad_();
  {
    GradientAverager first({p}, group);
    try {
      GradientAverager second({p}, group);
      FAIL() << "a second averager hooked the same parameter";
    } catch (const c10::Error& e) {
      EXPECT_THAT(e.what_without_backtrace(),
                  HasSubstr("parameter 0 already has a post-accumulate-grad hook"));
    }
  }
  EXPECT_NO_THROW(GradientAverager third({p}, group));
}

}  // namespace
}  // namespace roboloop::train
