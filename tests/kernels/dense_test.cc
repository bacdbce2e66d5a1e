// The GEMM kernel and the differentiable linear over it (kernels/dense.h) against float64
// LibTorch. Relative error is ||a - b|| / ||b|| per tensor.
#include "kernels/dense.h"

#include <gtest/gtest.h>

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace roboloop::kernels {
namespace {

double RelativeError(const torch::Tensor& ours, const torch::Tensor& reference) {
  const torch::Tensor b = reference.to(torch::kDouble);
  return (ours.to(torch::kDouble) - b).norm().item<double>() / std::max(b.norm().item<double>(), 1e-30);
}

// Runs `body` with `threads` intra-op threads, then restores the previous count.
template <typename Body>
auto WithThreads(int threads, Body body) {
  const int previous = at::get_num_threads();
  at::set_num_threads(threads);
  auto result = body();
  at::set_num_threads(previous);
  return result;
}

// The GEMM kernels this CPU and build have, by name.
std::vector<std::pair<std::string, GemmBlockKernel>> AvailableKernels() {
  std::vector<std::pair<std::string, GemmBlockKernel>> kernels;
  if (Avx2GemmKernel() != nullptr) kernels.emplace_back("avx2", Avx2GemmKernel());
  if (Avx512GemmKernel() != nullptr) kernels.emplace_back("avx512", Avx512GemmKernel());
  return kernels;
}

class GemmKernelTest : public ::testing::TestWithParam<std::tuple<int64_t, int64_t, int64_t>> {
 protected:
  void SetUp() override {
    if (AvailableKernels().empty()) GTEST_SKIP() << "no AVX2 + FMA or AVX-512 on this CPU or build";
  }
};

// Sizes with edges in every dimension: row tails below the 6-row block, column tails below a
// 16-column panel, odd panel counts (the AVX-512 kernel's last tile holds one panel), and
// reductions of one chunk, several, and several plus a tail. The last three are large enough to
// be split over threads, by rows and by column panels.
INSTANTIATE_TEST_SUITE_P(Shapes, GemmKernelTest,
                         ::testing::Values(std::make_tuple(1, 1, 1), std::make_tuple(5, 17, 3),
                                           std::make_tuple(6, 16, 16), std::make_tuple(13, 33, 128),
                                           std::make_tuple(64, 4, 130), std::make_tuple(7, 128, 600),
                                           std::make_tuple(200, 40, 513), std::make_tuple(30, 1000, 70),
                                           std::make_tuple(96, 48, 300)));

TEST_P(GemmKernelTest, ProductWithBiasMatchesFloat64) {
  const auto [m, n, k] = GetParam();
  const torch::Tensor a = torch::randn({m, k}), b = torch::randn({k, n}), bias = torch::randn({n});
  const torch::Tensor reference = torch::addmm(bias.to(torch::kDouble), a.to(torch::kDouble), b.to(torch::kDouble));
  for (const auto& [name, kernel] : AvailableKernels()) {
    const torch::Tensor ours =
        MatMul(kernel, {a.data_ptr<float>(), k, 1}, {b.data_ptr<float>(), n, 1}, m, n, k, bias);
    EXPECT_LE(RelativeError(ours, reference), 1e-6) << name;
  }
}

TEST_P(GemmKernelTest, StridedOperandsAreReadInPlace) {
  const auto [m, n, k] = GetParam();
  // A stored transposed ([k][m]) and B stored transposed ([n][k]): the backward's layouts.
  const torch::Tensor at = torch::randn({k, m}), bt = torch::randn({n, k});
  const torch::Tensor reference = torch::mm(at.t().to(torch::kDouble), bt.t().to(torch::kDouble));
  for (const auto& [name, kernel] : AvailableKernels()) {
    const torch::Tensor ours = MatMul(kernel, {at.data_ptr<float>(), 1, m}, {bt.data_ptr<float>(), 1, k}, m, n, k);
    EXPECT_LE(RelativeError(ours, reference), 1e-6) << name;
  }
}

TEST_P(GemmKernelTest, BitsDoNotDependOnTheThreadCount) {
  int64_t m, n, k;  // not a structured binding: the lambda below captures them
  std::tie(m, n, k) = GetParam();
  const torch::Tensor a = torch::randn({m, k}), b = torch::randn({k, n});
  for (const auto& [name, kernel] : AvailableKernels()) {
    const auto product = [&, kernel = kernel] {
      return MatMul(kernel, {a.data_ptr<float>(), k, 1}, {b.data_ptr<float>(), n, 1}, m, n, k);
    };
    const torch::Tensor one = WithThreads(1, product), two = WithThreads(2, product), three = WithThreads(3, product);
    EXPECT_TRUE(torch::equal(one, two)) << name;
    EXPECT_TRUE(torch::equal(one, three)) << name;
  }
}

// The AVX-512 kernel repeats the AVX2 kernel's operations in its order: equal bits, with and
// without bias, over plain and strided operands.
TEST_P(GemmKernelTest, Avx512KernelGivesTheAvx2KernelsBits) {
  if (Avx2GemmKernel() == nullptr || Avx512GemmKernel() == nullptr) {
    GTEST_SKIP() << "needs both the AVX2 and the AVX-512 kernel";
  }
  int64_t m, n, k;  // not a structured binding: the lambdas below capture them
  std::tie(m, n, k) = GetParam();
  const torch::Tensor a = torch::randn({m, k}), b = torch::randn({k, n}), bias = torch::randn({n});
  const torch::Tensor at = a.t().contiguous(), bt = b.t().contiguous();
  const auto plain = [&](GemmBlockKernel kernel) {
    return MatMul(kernel, {a.data_ptr<float>(), k, 1}, {b.data_ptr<float>(), n, 1}, m, n, k, bias);
  };
  const auto strided = [&](GemmBlockKernel kernel) {
    return MatMul(kernel, {at.data_ptr<float>(), 1, m}, {bt.data_ptr<float>(), 1, k}, m, n, k);
  };
  EXPECT_TRUE(torch::equal(plain(Avx2GemmKernel()), plain(Avx512GemmKernel())));
  EXPECT_TRUE(torch::equal(strided(Avx2GemmKernel()), strided(Avx512GemmKernel())));
}

TEST(GemmKernelEdgeTest, EmptyReductionGivesTheBias) {
  if (AvailableKernels().empty()) GTEST_SKIP() << "no AVX2 + FMA or AVX-512 on this CPU or build";
  const torch::Tensor bias = torch::randn({5});
  const float unused = 0;
  for (const auto& [name, kernel] : AvailableKernels()) {
    EXPECT_TRUE(torch::equal(MatMul(kernel, {&unused, 0, 1}, {&unused, 5, 1}, 3, 5, 0, bias), bias.expand({3, 5})))
        << name;
    EXPECT_TRUE(torch::equal(MatMul(kernel, {&unused, 0, 1}, {&unused, 5, 1}, 3, 5, 0), torch::zeros({3, 5}))) << name;
  }
}

TEST(GemmKernelEdgeTest, TheWidestKernelTheCpuHasIsSelected) {
  const GemmBlockKernel widest = Avx512GemmKernel() != nullptr ? Avx512GemmKernel() : Avx2GemmKernel();
  EXPECT_EQ(SelectedGemmKernel(), widest);
}

// Forward and every gradient of Dense against float64 torch::nn::functional::linear.
void ExpectDenseMatchesFloat64(const std::vector<int64_t>& x_shape, int64_t out, bool with_bias) {
  const int64_t in = x_shape.back();
  const torch::Tensor x0 = torch::randn(x_shape), w0 = torch::randn({out, in}) / std::sqrt(in + 1.0);
  const torch::Tensor b0 = with_bias ? torch::randn({out}) : torch::Tensor();
  const torch::Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_();
  const torch::Tensor b = with_bias ? b0.clone().requires_grad_() : b0;
  const torch::Tensor y = Dense(x, w, b);
  std::vector<int64_t> y_shape = x_shape;
  y_shape.back() = out;
  ASSERT_EQ(y.sizes().vec(), y_shape);
  const torch::Tensor dy = torch::randn(y.sizes());
  y.backward(dy);

  const torch::Tensor rx = x0.to(torch::kDouble).requires_grad_(), rw = w0.to(torch::kDouble).requires_grad_();
  const torch::Tensor rb = with_bias ? b0.to(torch::kDouble).requires_grad_() : b0;
  const torch::Tensor reference = torch::nn::functional::linear(rx, rw, rb);
  reference.backward(dy.to(torch::kDouble));
  EXPECT_LE(RelativeError(y, reference), 1e-6);
  EXPECT_LE(RelativeError(x.grad(), rx.grad()), 1e-6);
  EXPECT_LE(RelativeError(w.grad(), rw.grad()), 1e-6);
  if (with_bias) {
    EXPECT_LE(RelativeError(b.grad(), rb.grad()), 1e-6);
  }
}

TEST(DenseTest, MatchesFloat64LinearForwardAndBackward) {
  ExpectDenseMatchesFloat64({300, 128}, 512, true);  // a transformer FFN's first linear
  ExpectDenseMatchesFloat64({300, 512}, 128, true);  // and its second
  ExpectDenseMatchesFloat64({4, 9, 16}, 40, false);  // a padded batch, no bias
  ExpectDenseMatchesFloat64({7}, 3, true);           // one sample
}

TEST(DenseTest, WeightOnlyGradientWhenTheInputNeedsNone) {
  const torch::Tensor x = torch::randn({20, 8});
  const torch::Tensor w = torch::randn({5, 8}).requires_grad_();
  Dense(x, w, torch::Tensor()).sum().backward();
  EXPECT_LE(RelativeError(w.grad(), x.sum(0).expand({5, 8})), 1e-6);
}

TEST(DenseTest, AutocastAndOtherDtypesFallBackToLibTorch) {
  const torch::Tensor x = torch::randn({6, 8}), w = torch::randn({3, 8}), b = torch::randn({3});
  const torch::Tensor doubles = Dense(x.to(torch::kDouble), w.to(torch::kDouble), b.to(torch::kDouble));
  EXPECT_EQ(doubles.scalar_type(), torch::kDouble);
  at::autocast::set_autocast_enabled(at::kCPU, true);
  at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
  const torch::Tensor autocast = Dense(x, w, b);
  at::autocast::set_autocast_enabled(at::kCPU, false);
  at::autocast::clear_cache();
  EXPECT_EQ(autocast.scalar_type(), torch::kBFloat16);
}

TEST(DenseTest, MismatchedShapesAreRejectedWithTheirSizes) {
  if (SelectedGemmKernel() == nullptr) GTEST_SKIP() << "LibTorch's linear reports its own errors here";
  try {
    Dense(torch::randn({2, 7}), torch::randn({3, 8}), torch::Tensor());
    FAIL() << "no error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("input has 7 features, the weight expects 8"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace roboloop::kernels
