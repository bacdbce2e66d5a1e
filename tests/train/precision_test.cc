// Mixed-precision training parts (issue 22, req 2, 3, 9), compiled into this test: the fused
// AdamW against LibTorch's AdamW, the FP8 linear against float32 (tensorwise on the CPU; both
// scalings on CUDA, where a GPU with FP8 is visible), and the start-up checks' messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/cuda/CUDAContext.h>
#include <torch/torch.h>

#include <functional>
#include <optional>

#include "train/torch/fp8_linear.h"
#include "train/torch/fused_adamw.h"
#include "train/torch/startup_checks.h"

namespace roboloop::train {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

double RelativeError(const torch::Tensor& actual, const torch::Tensor& expected) {
  const torch::Tensor a = actual.to(torch::kDouble).cpu(), e = expected.to(torch::kDouble).cpu();
  return (a - e).norm().item<double>() / e.norm().item<double>();
}

// Two parameter groups (with and without decay) trained by `Optimizer` on the same gradients;
// parameter 2 has no gradient on every third step, so its step count lags behind.
template <typename Optimizer>
std::vector<torch::Tensor> TrainTwentySteps() {
  torch::manual_seed(3);
  std::vector<torch::Tensor> params = {torch::randn({24, 16}), torch::randn({16}), torch::randn({8, 16})};
  for (torch::Tensor& p : params) p.requires_grad_(true);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  auto options = torch::optim::AdamWOptions(1e-2).betas({0.9, 0.99}).eps(1e-8);
  groups.emplace_back(std::vector<torch::Tensor>{params[0], params[2]},
                      std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(options).weight_decay(0.1)));
  groups.emplace_back(std::vector<torch::Tensor>{params[1]},
                      std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(options).weight_decay(0.0)));
  Optimizer optimizer(std::move(groups), options);
  torch::Generator generator = at::make_generator<at::CPUGeneratorImpl>(11);
  for (int step = 0; step < 20; ++step) {
    optimizer.zero_grad();
    for (size_t i = 0; i < params.size(); ++i) {
      const torch::Tensor grad = torch::randn(params[i].sizes(), generator, torch::kFloat);
      if (i != 2 || step % 3 != 0) params[i].mutable_grad() = grad;
    }
    optimizer.step();
  }
  return params;
}

// Both compute AdamW in float32; they differ only in rounding order (bias corrections), so 20
// steps stay within 1e-6 relative (measured: 2.5e-8).
TEST(FusedAdamWTest, FollowsLibTorchAdamWWithin1e6OverTwentySteps) {
  const std::vector<torch::Tensor> fused = TrainTwentySteps<FusedAdamW>();
  const std::vector<torch::Tensor> loop = TrainTwentySteps<torch::optim::AdamW>();
  for (size_t i = 0; i < fused.size(); ++i) {
    EXPECT_LE(RelativeError(fused[i], loop[i]), 1e-6) << "parameter " << i;
  }
}

struct LinearCase {
  torch::Tensor x, weight, bias;
};

LinearCase MakeLinearCase(const torch::Device& device) {
  torch::manual_seed(5);
  // 37 rows: not a multiple of 16, so the weight-gradient GEMM pads its contracted dimension.
  return {torch::randn({37, 64}).to(device), (torch::randn({48, 64}) * 0.1).to(device),
          torch::randn({48}).to(device)};
}

// Output, dx, dW and db of `linear` on the case, with gradients of a fixed random dy.
std::vector<torch::Tensor> ForwardAndGradients(const LinearCase& c,
                                               const std::function<torch::Tensor(const LinearCase&)>& linear) {
  LinearCase leaf{c.x.clone().requires_grad_(true), c.weight.clone().requires_grad_(true),
                  c.bias.clone().requires_grad_(true)};
  const torch::Tensor y = linear(leaf);
  const torch::Tensor dy = torch::randn({37, 48}, at::make_generator<at::CPUGeneratorImpl>(9)).to(c.x.device());
  (y.to(torch::kFloat) * dy).sum().backward();
  return {y.detach(), leaf.x.grad(), leaf.weight.grad(), leaf.bias.grad()};
}

// e4m3 rounds each operand to 3 mantissa bits (relative spacing 2^-3) and, tensorwise, e5m2 the
// gradient to 2 (2^-2; rowwise keeps it in e4m3); over 64-term dot products of random data the
// errors average to a few percent (measured on the CPU, tensorwise: y 2.4 %, dx 5.9 %, dW 6.0 %,
// db 0.2 %: db only sees bf16).
void ExpectFollowsFloat32(Fp8Scaling scaling, const torch::Device& device) {
  const LinearCase c = MakeLinearCase(device);
  const auto reference = ForwardAndGradients(c, [](const LinearCase& l) {
    return torch::nn::functional::linear(l.x, l.weight, l.bias);
  });
  const auto fp8 = ForwardAndGradients(c, [scaling](const LinearCase& l) {
    return Fp8Linear(l.x, l.weight, l.bias, scaling);
  });
  EXPECT_EQ(fp8[0].scalar_type(), torch::kBFloat16);
  EXPECT_EQ(fp8[2].scalar_type(), torch::kFloat) << "the master weight's gradient is float32";
  const std::vector<double> tolerance = {0.05, 0.10, 0.10, 0.01};
  const char* names[] = {"y", "dx", "dW", "db"};
  for (size_t i = 0; i < reference.size(); ++i) {
    const double error = RelativeError(fp8[i], reference[i]);
    EXPECT_LE(error, tolerance[i]) << names[i];
    EXPECT_GT(error, 0) << names[i] << ": FP8 had no effect";
  }
}

TEST(Fp8LinearTest, TensorwiseForwardAndGradientsFollowFloat32OnTheCpu) {
  ExpectFollowsFloat32(Fp8Scaling::kTensorwise, torch::kCPU);
}

TEST(Fp8LinearTest, ScopeSelectsTheScalingAndRestoresThePreviousOne) {
  EXPECT_FALSE(ActiveFp8Scaling().has_value());
  {
    const Fp8LinearScope outer(Fp8Scaling::kTensorwise);
    {
      const Fp8LinearScope inner(Fp8Scaling::kRowwise);
      EXPECT_EQ(ActiveFp8Scaling(), Fp8Scaling::kRowwise);
    }
    EXPECT_EQ(ActiveFp8Scaling(), Fp8Scaling::kTensorwise);
  }
  EXPECT_FALSE(ActiveFp8Scaling().has_value());
}

TEST(Fp8LinearTest, RowwiseOnTheCpuIsAnErrorNamingTheSetting) {
  const LinearCase c = MakeLinearCase(torch::kCPU);
  try {
    Fp8Linear(c.x, c.weight, c.bias, Fp8Scaling::kRowwise);
    FAIL() << "rowwise scales ran on the CPU";
  } catch (const c10::Error& e) {
    EXPECT_THAT(e.what_without_backtrace(), AllOf(HasSubstr("fp8_scaling: rowwise"), HasSubstr("CUDA only")));
  }
}

// A visible GPU with FP8 tensor cores (compute capability 8.9 or later), or nothing.
std::optional<torch::Device> Fp8Gpu() {
  if (!torch::cuda::is_available()) return std::nullopt;
  const cudaDeviceProp* properties = at::cuda::getDeviceProperties(0);
  if (Fp8CapabilityProblem(0, properties->name, properties->major, properties->minor)) return std::nullopt;
  return torch::Device(torch::kCUDA, 0);
}

TEST(Fp8LinearTest, CudaTensorwiseAndRowwiseFollowFloat32) {
  const std::optional<torch::Device> gpu = Fp8Gpu();
  if (!gpu) GTEST_SKIP() << "no CUDA device with compute capability 8.9 or later";
  ExpectFollowsFloat32(Fp8Scaling::kTensorwise, *gpu);
  ExpectFollowsFloat32(Fp8Scaling::kRowwise, *gpu);
}

TEST(StartupChecksTest, Fp8NeedsComputeCapability89AndNamesTheGpu) {
  EXPECT_THAT(Fp8CapabilityProblem(1, "NVIDIA A100-SXM4-80GB", 8, 0).value_or(""),
              AllOf(HasSubstr("precision: fp8"), HasSubstr("cuda:1 is NVIDIA A100-SXM4-80GB"),
                    HasSubstr("compute capability 8.0"), HasSubstr("8.9 or later")));
  EXPECT_TRUE(Fp8CapabilityProblem(0, "NVIDIA GeForce RTX 3090", 8, 6).has_value());
  EXPECT_FALSE(Fp8CapabilityProblem(0, "NVIDIA L40S", 8, 9).has_value());
  EXPECT_FALSE(Fp8CapabilityProblem(0, "NVIDIA H200", 9, 0).has_value());
  EXPECT_FALSE(Fp8CapabilityProblem(0, "NVIDIA B200", 10, 0).has_value());
}

TEST(StartupChecksTest, HeadDimsTheCudaKernelsDoNotTakeNameTheSettings) {
  EXPECT_THAT(CudaHeadDimProblem(1000, 4).value_or(""),
              AllOf(HasSubstr("d_model 1000 / heads 4"), HasSubstr("head dim 250"), HasSubstr("multiple of 8 up to 256")));
  EXPECT_THAT(CudaHeadDimProblem(4096, 8).value_or(""), HasSubstr("head dim 512"));
  EXPECT_FALSE(CudaHeadDimProblem(1024, 16).has_value());
  EXPECT_FALSE(CudaHeadDimProblem(2048, 8).has_value());
  EXPECT_THAT(Fp8WidthProblem(120, 512).value_or(""), AllOf(HasSubstr("d_model (120)"), HasSubstr("multiples of 16")));
  EXPECT_FALSE(Fp8WidthProblem(128, 512).has_value());
}

TEST(StartupChecksTest, OutOfMemoryNamesTheDeviceTheModelSizeAndTheSettings) {
  const std::string message = StartupOutOfMemoryMessage("cuda:0", "in the first training step", 151000000, 64,
                                                        "CUDA out of memory. Tried to allocate 2.00 GiB");
  EXPECT_THAT(message, AllOf(HasSubstr("cuda:0 ran out of memory in the first training step"),
                             HasSubstr("151000000 parameters (2304 MiB"), HasSubstr("64 samples"),
                             HasSubstr("batch_size"), HasSubstr("precision: bf16"), HasSubstr("Tried to allocate")));
}

}  // namespace
}  // namespace roboloop::train
