// GraphedStep's capture (train/torch/graphed_step.h): a step that synchronises with the host
// cannot be captured and is reported as GraphCaptureError, after which the memory the capture
// took is back, the device still runs eager work (random draws on it too) and a well-formed
// step captures and replays: the premise of `cuda_graph: auto` falling back to eager steps.
// A failure anywhere from capture_begin() to capture_end() is abandoned and reported alike
// (CaptureOrAbandon, checked on the CPU with stand-in calls). The CUDA cases run where LibTorch
// sees a GPU (label gpu).
//
// Tolerance: the replayed figures are those of float32 sums of small integers, exact.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/cuda.h>

#include "train/torch/graphed_step.h"

namespace roboloop::train {
namespace {

PolicyInputs InputsOnes() {
  PolicyInputs inputs;
  inputs.obs = torch::ones({4, 2, 3});
  return inputs;
}

// Bytes a failing capture allocates in the graph's pool before it reads the host.
constexpr int64_t kCaptureScratchBytes = int64_t{256} << 20;

// A step whose figures are {sum(obs) * lr, count}; with `sync` set it allocates
// kCaptureScratchBytes and reads the host.
CapturableStep StepThatSums(bool sync) {
  return [sync](const PolicyInputs& inputs, const LossNoise&, const torch::Tensor& lr, const torch::Tensor& count) {
    const torch::Tensor sum = inputs.obs.sum();
    if (sync) {
      const torch::Tensor scratch = torch::ones({kCaptureScratchBytes}, inputs.obs.options().dtype(torch::kUInt8));
      (void)(scratch.sum() + sum).item<float>();  // not allowed while capturing
    }
    return torch::stack({sum * lr, count});
  };
}

int64_t ReservedBytes(const torch::Device& device) {
  c10::cuda::CUDACachingAllocator::emptyCache();
  return c10::cuda::CUDACachingAllocator::getDeviceStats(device.index())
      .reserved_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)]
      .current;
}

void WarmUpFully(GraphedStep& graphed, const torch::Device& device, const CapturableStep& step) {
  for (int i = 0; i < GraphedStep::kWarmupSteps; ++i) {
    graphed.WarmUp([&] {
      PolicyInputs on_device;
      on_device.obs = InputsOnes().obs.to(device);
      const torch::Tensor scalar = torch::ones({}, torch::TensorOptions().device(device));
      (void)step(on_device, LossNoise(), scalar, scalar);
    });
  }
}

// Stand-ins for the capture's calls that fail at one of them and count what ran.
struct CountedCalls {
  std::string failing;  // "begin", "record", "end" or "" (none fails)
  bool out_of_memory = false;
  int recorded = 0, ended = 0, abandoned = 0;

  CaptureCalls Calls() {
    return {[this] { FailIf("begin"); },
            [this] {
              FailIf("record");
              ++recorded;
              return torch::ones({2});
            },
            [this] {
              FailIf("end");
              ++ended;
            },
            [this] { ++abandoned; }};
  }

  void FailIf(const std::string& call) const {
    if (call != failing) return;
    TORCH_CHECK_WITH(OutOfMemoryError, !out_of_memory, "out of memory in ", call);
    TORCH_CHECK(false, call, " refused");
  }
};

TEST(GraphedStepTest, ACaptureThatSucceedsIsNotAbandoned) {
  CountedCalls counted;
  EXPECT_TRUE(torch::equal(CaptureOrAbandon(counted.Calls()), torch::ones({2})));
  EXPECT_EQ(counted.recorded, 1);
  EXPECT_EQ(counted.ended, 1);
  EXPECT_EQ(counted.abandoned, 0);
}

TEST(GraphedStepTest, AFailureInBeginRecordOrEndIsAbandonedOnceAndReportedAsACaptureError) {
  for (const std::string failing : {"begin", "record", "end"}) {
    SCOPED_TRACE(failing);
    CountedCalls counted;
    counted.failing = failing;
    try {
      CaptureOrAbandon(counted.Calls());
      FAIL() << "a failing " << failing << " was not reported";
    } catch (const GraphCaptureError& e) {
      EXPECT_THAT(e.what(), ::testing::AllOf(::testing::HasSubstr("cuda_graph: off"),
                                             ::testing::HasSubstr(failing + " refused")));
    }
    EXPECT_EQ(counted.abandoned, 1);
    EXPECT_EQ(counted.recorded, failing == "end" ? 1 : 0);
    EXPECT_EQ(counted.ended, 0);
  }
}

TEST(GraphedStepTest, RunningOutOfMemoryWhileCapturingIsAbandonedAndRethrownAsItIs) {
  for (const std::string failing : {"begin", "record"}) {
    SCOPED_TRACE(failing);
    CountedCalls counted;
    counted.failing = failing;
    counted.out_of_memory = true;
    EXPECT_THROW(CaptureOrAbandon(counted.Calls()), c10::OutOfMemoryError);
    EXPECT_EQ(counted.abandoned, 1);
  }
}

TEST(GraphedStepTest, CudaAGraphWhoseCaptureBeginFailedIsAbandonedAndTheDeviceStaysUsable) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const torch::Device device(torch::kCUDA, 0);
  {
    // capture_begin() refuses the default stream after it has put the generator in capture mode.
    const c10::cuda::CUDAStreamGuard on_default(c10::cuda::getDefaultCUDAStream(0));
    RecoverableCudaGraph graph;
    EXPECT_THROW(graph.capture_begin(), c10::Error);
    graph.AbandonFailedCapture();
  }
  EXPECT_EQ(torch::randn({8}, torch::TensorOptions().device(device)).isfinite().all().item<bool>(), true);
  GraphedStep working(device, StepThatSums(/*sync=*/false));
  WarmUpFully(working, device, StepThatSums(/*sync=*/false));
  EXPECT_EQ(working.Replay(InputsOnes(), LossNoise(), 0.5, 1).loss, 12.0);
}

TEST(GraphedStepTest, CudaAStepThatReadsTheHostFailsToCaptureAndTheDeviceStaysUsable) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const torch::Device device(torch::kCUDA, 0);
  const PolicyInputs inputs = InputsOnes();
  GraphedStep failing(device, StepThatSums(/*sync=*/true));
  WarmUpFully(failing, device, StepThatSums(/*sync=*/false));
  ASSERT_TRUE(failing.Takes(inputs, LossNoise()));
  const int64_t reserved_before = ReservedBytes(device);
  try {
    failing.Replay(inputs, LossNoise(), 0.5, 1);
    FAIL() << "a step that reads the host was captured";
  } catch (const GraphCaptureError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("cuda_graph: off"));
  }
  // While the GraphedStep still lives: the failed capture's pool went back, and eager work,
  // random draws on the GPU included, runs.
  EXPECT_LT(ReservedBytes(device), reserved_before + kCaptureScratchBytes);
  EXPECT_EQ(torch::ones({8}, torch::TensorOptions().device(device)).sum().item<float>(), 8.0f);
  EXPECT_EQ(torch::randn({8}, torch::TensorOptions().device(device)).isfinite().all().item<bool>(), true);
  GraphedStep working(device, StepThatSums(/*sync=*/false));
  WarmUpFully(working, device, StepThatSums(/*sync=*/false));
  const ReplayedFigures first = working.Replay(inputs, LossNoise(), 0.5, 1);
  const ReplayedFigures second = working.Replay(inputs, LossNoise(), 2.0, 5);
  EXPECT_EQ(first.loss, 12.0);
  EXPECT_EQ(first.grad_norm, 1.0);
  EXPECT_EQ(second.loss, 48.0);
  EXPECT_EQ(second.grad_norm, 5.0);
}

}  // namespace
}  // namespace roboloop::train
