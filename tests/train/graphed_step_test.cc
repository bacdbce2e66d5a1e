// GraphedStep's capture (train/torch/graphed_step.h): a step that synchronises with the host
// cannot be captured and is reported as GraphCaptureError, after which the memory the capture
// took is back, the device still runs eager work (random draws on it too) and a well-formed
// step captures and replays: the premise of `cuda_graph: auto` falling back to eager steps.
// The CUDA cases run where LibTorch sees a GPU (label gpu).
//
// Tolerance: the replayed figures are those of float32 sums of small integers, exact.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <c10/cuda/CUDACachingAllocator.h>
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
