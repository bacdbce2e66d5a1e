// The differentiable layer norm kernel against float64 torch::layer_norm (kernels/layer_norm.h).
#include "kernels/layer_norm.h"

#include <gtest/gtest.h>

#include <ATen/Parallel.h>

namespace roboloop::kernels {
namespace {

// ||a - b|| / ||b|| over a whole tensor, in float64.
double RelativeError(const torch::Tensor& a, const torch::Tensor& b) {
  const torch::Tensor reference = b.to(torch::kDouble);
  return (a.to(torch::kDouble) - reference).norm().item<double>() / reference.norm().item<double>();
}

struct Gradients {
  torch::Tensor y, dx, dweight, dbias;
};

// Output and gradients of `norm` for upstream gradient dy, at `dtype`.
template <typename Norm>
Gradients Run(const Norm& norm, const torch::Tensor& x, const torch::Tensor& weight,
              const torch::Tensor& bias, const torch::Tensor& dy, torch::ScalarType dtype) {
  const auto leaf = [dtype](const torch::Tensor& t) {
    return t.defined() ? t.to(dtype).clone().requires_grad_() : torch::Tensor();
  };
  torch::Tensor xs = leaf(x), w = leaf(weight), b = leaf(bias);
  torch::Tensor y = norm(xs, w, b);
  y.backward(dy.to(dtype));
  return {y.detach(), xs.grad(), w.defined() ? w.grad() : torch::Tensor(),
          b.defined() ? b.grad() : torch::Tensor()};
}

Gradients Ours(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
               const torch::Tensor& dy) {
  return Run([](auto& x, auto& w, auto& b) { return DifferentiableLayerNorm(x, w, b); }, x,
             weight, bias, dy, torch::kFloat);
}

Gradients Reference(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                    const torch::Tensor& dy) {
  return Run([](auto& x, auto& w, auto& b) { return torch::layer_norm(x, {x.size(-1)}, w, b, 1e-5); },
             x, weight, bias, dy, torch::kDouble);
}

TEST(LayerNormTest, OutputAndGradientsMatchFloat64WithinTolerance) {
  for (int64_t rows : {1, 3, 64, 65, 300}) {
    for (int64_t n : {5, 16, 128, 130}) {
      for (bool affine : {true, false}) {
        const torch::Tensor x = torch::randn({rows, n}) * 2.0 + 0.5;
        const torch::Tensor weight = affine ? torch::randn({n}) : torch::Tensor();
        const torch::Tensor bias = affine ? torch::randn({n}) : torch::Tensor();
        const torch::Tensor dy = torch::randn({rows, n});
        const Gradients ours = Ours(x, weight, bias, dy), reference = Reference(x, weight, bias, dy);
        const std::string where = "rows " + std::to_string(rows) + " n " + std::to_string(n) +
                                  (affine ? " affine" : " plain");
        EXPECT_LE(RelativeError(ours.y, reference.y), 1e-6) << where;
        EXPECT_LE(RelativeError(ours.dx, reference.dx), 1e-5) << where;
        if (!affine) continue;
        EXPECT_LE(RelativeError(ours.dbias, reference.dbias), 1e-5) << where;
        EXPECT_LE(RelativeError(ours.dweight, reference.dweight), 1e-5) << where;
      }
    }
  }
}

TEST(LayerNormTest, LeadingDimsAndNonContiguousInputsAreNormalisedPerRow) {
  const torch::Tensor x = torch::randn({4, 40, 96}).slice(1, 8);
  const torch::Tensor weight = torch::randn({96}), bias = torch::randn({96});
  const torch::Tensor dy = torch::randn(x.sizes());
  const Gradients ours = Ours(x, weight, bias, dy), reference = Reference(x, weight, bias, dy);
  EXPECT_EQ(ours.y.sizes(), x.sizes());
  EXPECT_LE(RelativeError(ours.y, reference.y), 1e-6);
  EXPECT_LE(RelativeError(ours.dx, reference.dx), 1e-5);
  EXPECT_LE(RelativeError(ours.dweight, reference.dweight), 1e-5);
}

TEST(LayerNormTest, BitsDoNotDependOnTheThreadCount) {
  const torch::Tensor x = torch::randn({1000, 128});
  const torch::Tensor weight = torch::randn({128}), bias = torch::randn({128});
  const torch::Tensor dy = torch::randn({1000, 128});
  const int previous = at::get_num_threads();
  at::set_num_threads(1);
  const Gradients one = Ours(x, weight, bias, dy);
  at::set_num_threads(2);
  const Gradients two = Ours(x, weight, bias, dy);
  at::set_num_threads(previous);
  EXPECT_TRUE(torch::equal(one.y, two.y));
  EXPECT_TRUE(torch::equal(one.dx, two.dx));
  EXPECT_TRUE(torch::equal(one.dweight, two.dweight));
  EXPECT_TRUE(torch::equal(one.dbias, two.dbias));
}

TEST(LayerNormTest, OtherDtypesFallBackToLibTorch) {
  const torch::Tensor x = torch::randn({5, 12}, torch::kDouble);
  const torch::Tensor weight = torch::randn({12}, torch::kDouble);
  EXPECT_TRUE(torch::equal(DifferentiableLayerNorm(x, weight, torch::Tensor()),
                           torch::layer_norm(x, {12}, weight, torch::Tensor(), 1e-5)));
}

TEST(LayerNormTest, AWeightOfTheWrongSizeIsAnErrorNamingTheShapes) {
  try {
    DifferentiableLayerNorm(torch::randn({3, 8}), torch::randn({7}), torch::Tensor());
    FAIL() << "no error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what_without_backtrace()).find("must be [8]"), std::string::npos)
        << e.what_without_backtrace();
  }
}

}  // namespace
}  // namespace roboloop::kernels
