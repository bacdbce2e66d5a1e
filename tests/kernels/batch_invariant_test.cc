// Batch-invariant inference ops: a row's output is bitwise equal alone, in batches of 1..256
// and permuted; the mode switch selects them and restores the default (issue 5, req 4-5).
#include "kernels/batch_invariant.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "tests/kernels/attention_test_util.h"

namespace roboloop::kernels {
namespace {

using RowOp = std::function<torch::Tensor(const torch::Tensor&)>;

// Checks op(rows) row by row against op(single row) for batch sizes 1..256 and a permuted
// batch, all bitwise.
void ExpectBatchInvariant(const RowOp& op, int64_t features, torch::Generator gen) {
  BatchInvariantScope invariant;
  torch::Tensor pool = at::normal(0.0, 1.0, {256, features}, gen).to(torch::kFloat);
  torch::Tensor alone = op(pool.narrow(0, 0, 1));
  for (int64_t batch = 1; batch <= 256; batch += (batch < 16 ? 1 : 17)) {
    torch::Tensor out = op(pool.narrow(0, 0, batch));
    ASSERT_TRUE(torch::equal(out.narrow(0, 0, 1), alone)) << "batch " << batch;
  }
  torch::Tensor full = op(pool);
  torch::Tensor order = at::randperm(256, gen);
  torch::Tensor permuted = op(pool.index_select(0, order));
  EXPECT_TRUE(torch::equal(permuted, full.index_select(0, order)));
  for (int64_t row : {0, 77, 255}) {
    EXPECT_TRUE(torch::equal(op(pool.narrow(0, row, 1)), full.narrow(0, row, 1))) << row;
  }
}

class BatchInvariantTest : public ::testing::Test {
 protected:
  torch::Generator gen_ = at::detail::createCPUGenerator(testing::RunSeed());
};

TEST_F(BatchInvariantTest, LinearRowsAreBatchInvariantAndCorrect) {
  torch::Tensor w = at::normal(0.0, 1.0, {37, 100}, gen_).to(torch::kFloat);
  torch::Tensor b = at::normal(0.0, 1.0, {37}, gen_).to(torch::kFloat);
  ExpectBatchInvariant([&](const torch::Tensor& x) { return Linear(x, w, b); }, 100, gen_);
  torch::Tensor x = at::normal(0.0, 1.0, {9, 100}, gen_).to(torch::kFloat);
  torch::Tensor expected = torch::matmul(x.to(torch::kDouble), w.to(torch::kDouble).t()) + b;
  BatchInvariantScope invariant;
  EXPECT_LE(testing::RelativeError(Linear(x, w, b), expected), 1e-6);
  EXPECT_LE(testing::RelativeError(Linear(x, w, torch::Tensor()), expected - b), 1e-6);
}

// The packed copy of a weight is reused between calls; a changed or a new weight must never
// be served from it.
TEST_F(BatchInvariantTest, LinearFollowsWeightsChangedInPlaceAndNewWeights) {
  BatchInvariantScope invariant;
  torch::Tensor x = at::normal(0.0, 1.0, {5, 48}, gen_).to(torch::kFloat);
  torch::Tensor w = at::normal(0.0, 1.0, {20, 48}, gen_).to(torch::kFloat);
  auto expect_matches = [&](const torch::Tensor& weight) {
    const torch::Tensor expected = torch::matmul(x.to(torch::kDouble), weight.to(torch::kDouble).t());
    EXPECT_LE(testing::RelativeError(Linear(x, weight, torch::Tensor()), expected), 1e-6);
  };
  expect_matches(w);
  w.mul_(-3.0);
  expect_matches(w);
  w.narrow(0, 4, 1).fill_(7.0);
  expect_matches(w);
  for (int i = 0; i < 3; ++i) {
    torch::Tensor fresh = at::normal(0.0, 1.0, {20, 48}, gen_).to(torch::kFloat);
    expect_matches(fresh);
  }
  expect_matches(w);
}

TEST_F(BatchInvariantTest, LayerNormRowsAreBatchInvariantAndCorrect) {
  torch::Tensor w = at::normal(1.0, 0.1, {70}, gen_).to(torch::kFloat);
  torch::Tensor b = at::normal(0.0, 0.1, {70}, gen_).to(torch::kFloat);
  ExpectBatchInvariant([&](const torch::Tensor& x) { return LayerNorm(x, w, b); }, 70, gen_);
  torch::Tensor x = at::normal(0.0, 3.0, {5, 70}, gen_).to(torch::kFloat);
  torch::Tensor expected = torch::layer_norm(x.to(torch::kDouble), {70}, w.to(torch::kDouble),
                                             b.to(torch::kDouble), 1e-5);
  BatchInvariantScope invariant;
  EXPECT_LE(testing::RelativeError(LayerNorm(x, w, b), expected), 1e-6);
}

TEST_F(BatchInvariantTest, SoftmaxRowsAreBatchInvariantAndCorrect) {
  ExpectBatchInvariant([](const torch::Tensor& x) { return Softmax(x); }, 45, gen_);
  torch::Tensor x = at::normal(0.0, 4.0, {6, 45}, gen_).to(torch::kFloat);
  BatchInvariantScope invariant;
  EXPECT_LE(testing::RelativeError(Softmax(x), torch::softmax(x.to(torch::kDouble), -1)), 1e-6);
}

TEST_F(BatchInvariantTest, ActivationsAreBatchInvariantAndCorrect) {
  torch::Tensor x = at::normal(0.0, 2.0, {7, 33}, gen_).to(torch::kFloat);
  torch::Tensor x64 = x.to(torch::kDouble);
  const std::pair<Activation, torch::Tensor> cases[] = {
      {Activation::kRelu, torch::relu(x64)},
      {Activation::kGelu, torch::gelu(x64)},
      {Activation::kSilu, torch::silu(x64)},
      {Activation::kTanh, torch::tanh(x64)},
  };
  for (const auto& [activation, expected] : cases) {
    SCOPED_TRACE(static_cast<int>(activation));
    ExpectBatchInvariant([a = activation](const torch::Tensor& t) { return Activate(a, t); },
                         33, gen_);
    BatchInvariantScope invariant;
    EXPECT_LE(testing::RelativeError(Activate(activation, x), expected), 1e-6);
  }
}

// A small policy MLP (linear, layer norm, gelu, linear, tanh) evaluated row by row.
TEST_F(BatchInvariantTest, MlpForwardIsBatchInvariant) {
  torch::Tensor w1 = at::normal(0.0, 0.1, {256, 48}, gen_).to(torch::kFloat);
  torch::Tensor b1 = at::normal(0.0, 0.1, {256}, gen_).to(torch::kFloat);
  torch::Tensor w2 = at::normal(0.0, 0.1, {8, 256}, gen_).to(torch::kFloat);
  auto mlp = [&](const torch::Tensor& x) {
    torch::Tensor h = Activate(Activation::kGelu, LayerNorm(Linear(x, w1, b1), {}, {}));
    return Activate(Activation::kTanh, Linear(h, w2, {}));
  };
  ExpectBatchInvariant(mlp, 48, gen_);
}

TEST_F(BatchInvariantTest, ScopeSwitchesModeAndRestoresIt) {
  EXPECT_FALSE(BatchInvariantModeEnabled());
  {
    BatchInvariantScope on;
    EXPECT_TRUE(BatchInvariantModeEnabled());
    {
      BatchInvariantScope off(false);
      EXPECT_FALSE(BatchInvariantModeEnabled());
    }
    EXPECT_TRUE(BatchInvariantModeEnabled());
  }
  EXPECT_FALSE(BatchInvariantModeEnabled());
  // Outside the mode the default ops run: they accept float64, the invariant ones do not.
  torch::Tensor x = torch::ones({2, 3}, torch::kDouble);
  EXPECT_NO_THROW(Softmax(x));
  BatchInvariantScope on;
  EXPECT_THROW(Softmax(x), c10::Error);
}

TEST_F(BatchInvariantTest, BadInputsNameTheProblem) {
  BatchInvariantScope invariant;
  torch::Tensor x = torch::ones({2, 3});
  try {
    Linear(x, torch::ones({4, 5}), {});
    FAIL() << "mismatched weight accepted";
  } catch (const c10::Error& e) {
    EXPECT_THAT(e.what_without_backtrace(), ::testing::HasSubstr("weight must be"));
  }
  try {
    LayerNorm(x, torch::ones({4}), {});
    FAIL() << "mismatched layer-norm weight accepted";
  } catch (const c10::Error& e) {
    EXPECT_THAT(e.what_without_backtrace(), ::testing::HasSubstr("weight must be"));
  }
}

}  // namespace
}  // namespace roboloop::kernels
