// The differentiable GELU kernel against float64 torch::gelu (kernels/gelu.h).
#include "kernels/gelu.h"

#include <gtest/gtest.h>

#include <ATen/Parallel.h>

namespace roboloop::kernels {
namespace {

// Inputs across the range that matters, both tails included, plus fresh normals.
torch::Tensor Inputs() {
  return torch::cat({torch::linspace(-12.0, 12.0, 48001), torch::randn({4097}) * 3.0});
}

TEST(GeluTest, ForwardMatchesFloat64ErfGelu) {
  const torch::Tensor x = Inputs();
  const torch::Tensor ours = Gelu(x).to(torch::kDouble);
  const torch::Tensor reference = torch::gelu(x.to(torch::kDouble));
  const torch::Tensor error = (ours - reference).abs();
  const torch::Tensor bound = x.to(torch::kDouble).abs() * 3e-7 + 1e-37;
  std::cout << "max ratio " << (error / (x.to(torch::kDouble).abs() + 1e-37)).max().item<double>() << "\n";
  EXPECT_TRUE(torch::all(error <= bound).item<bool>())
      << "worst excess " << (error - bound).max().item<double>() << " at x = "
      << x[(error - bound).argmax()].item<double>();
}

TEST(GeluTest, GradientMatchesFloat64Autograd) {
  const torch::Tensor x = Inputs();
  const torch::Tensor dy = torch::randn(x.sizes());
  torch::Tensor ours_x = x.clone().requires_grad_();
  Gelu(ours_x).backward(dy);
  torch::Tensor reference_x = x.to(torch::kDouble).requires_grad_();
  torch::gelu(reference_x).backward(dy.to(torch::kDouble));
  const torch::Tensor ours = ours_x.grad().to(torch::kDouble);
  const torch::Tensor reference = reference_x.grad();
  // Relative error ||a - b|| / ||b|| over the tensor, and element-wise absolute error.
  EXPECT_LE((ours - reference).norm().item<double>() / reference.norm().item<double>(), 1e-6);
  EXPECT_LE((ours - reference).abs().max().item<double>() /
                std::max(1.0, dy.abs().max().item<double>()),
            1e-6);
}

TEST(GeluTest, ElementBitsDoNotDependOnPositionLengthOrThreads) {
  const torch::Tensor x = torch::randn({10007});
  torch::Tensor one_thread, two_threads;
  const int previous = at::get_num_threads();
  at::set_num_threads(1);
  one_thread = Gelu(x);
  at::set_num_threads(2);
  two_threads = Gelu(x);
  at::set_num_threads(previous);
  EXPECT_TRUE(torch::equal(one_thread, two_threads));
  for (int64_t start : {0, 3, 17}) {
    for (int64_t length : {1, 15, 16, 37}) {
      EXPECT_TRUE(torch::equal(Gelu(x.narrow(0, start, length).clone()),
                               one_thread.narrow(0, start, length)))
          << "start " << start << " length " << length;
    }
  }
}

TEST(GeluTest, OtherDtypesFallBackToTorch) {
  const torch::Tensor x = torch::randn({64}).to(torch::kBFloat16);
  const torch::Tensor y = Gelu(x);
  EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(y, torch::gelu(x)));
}

TEST(GeluTest, NonContiguousInputsAreHandled) {
  const torch::Tensor x = torch::randn({32, 48});
  EXPECT_TRUE(torch::equal(Gelu(x.t()), Gelu(x.t().contiguous())));
}

}  // namespace
}  // namespace roboloop::kernels
