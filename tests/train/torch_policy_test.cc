// The ABI-2 policy handle of the torch boundary (issue 4, req 7): MLP checkpoints,
// batch-invariant inference and clear errors on bad files (TorchScript files:
// torchscript_policy_test.cc).
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/train/policy_test_files.h"
#include "tests/util/loaded_torch_runtime.h"
#include "tests/util/subprocess.h"
#include "train/torch_runtime.h"

namespace roboloop::train {
namespace {

using ::roboloop::testing::LoadedTorchRuntime;
using ::roboloop::testing::RandomRows;
using ::testing::AllOf;
using ::testing::HasSubstr;

// Reference forward of a tanh MLP in double precision.
std::vector<double> ReferenceMlp(const TensorMap& tensors, const std::vector<int64_t>& widths,
                                 const float* obs) {
  std::vector<double> x(obs, obs + widths.front());
  for (size_t layer = 0; layer + 1 < widths.size(); ++layer) {
    const FloatTensor& w = tensors.at("layers." + std::to_string(layer) + ".weight");
    const FloatTensor& b = tensors.at("layers." + std::to_string(layer) + ".bias");
    std::vector<double> y(static_cast<size_t>(widths[layer + 1]));
    for (int64_t o = 0; o < widths[layer + 1]; ++o) {
      double sum = b.values[o];
      for (int64_t i = 0; i < widths[layer]; ++i) sum += w.values[o * widths[layer] + i] * x[i];
      y[o] = layer + 2 < widths.size() ? std::tanh(sum) : sum;
    }
    x = y;
  }
  return x;
}

TEST(TorchPolicyTest, MlpMatchesAReferenceForwardInBothModes) {
  const std::string path = roboloop::testing::MakeTempDir("mlp") + "/policy.safetensors";
  const std::vector<int64_t> widths = {5, 16, 8, 3};
  const TensorMap tensors = testing::RandomMlpTensors(widths, 11);
  ASSERT_TRUE(WriteSafetensors(path, tensors).ok());
  auto policy = LoadedTorchRuntime().LoadPolicy(path, "mlp", testing::MlpOptionsJson(widths, "tanh"));
  ASSERT_TRUE(policy.ok()) << policy.status();
  const std::vector<float> obs = RandomRows(9, 5, 2);
  for (bool invariant : {false, true}) {
    std::vector<float> actions(9 * 3);
    ASSERT_TRUE((*policy)->Act(obs.data(), 9, 5, actions.data(), 3, invariant).ok());
    for (int row = 0; row < 9; ++row) {
      const std::vector<double> expected = ReferenceMlp(tensors, widths, obs.data() + row * 5);
      for (int a = 0; a < 3; ++a) {
        EXPECT_NEAR(actions[row * 3 + a], expected[a], 1e-5 * (1.0 + std::abs(expected[a])))
            << "row " << row << " invariant " << invariant;
      }
    }
  }
}

TEST(TorchPolicyTest, BatchInvariantMlpRowIsBitwiseEqualAloneAndInABatchOf64) {
  const std::string path = roboloop::testing::MakeTempDir("mlp") + "/policy.safetensors";
  const std::vector<int64_t> widths = {17, 256, 256, 6};
  testing::WriteMlp(path, widths, 5);
  auto policy = LoadedTorchRuntime().LoadPolicy(path, "mlp", testing::MlpOptionsJson(widths, "gelu"));
  ASSERT_TRUE(policy.ok()) << policy.status();
  const std::vector<float> obs = RandomRows(64, 17, 3);
  std::vector<float> batched(64 * 6), alone(6);
  ASSERT_TRUE((*policy)->Act(obs.data(), 64, 17, batched.data(), 6, true).ok());
  for (int row = 0; row < 64; ++row) {
    ASSERT_TRUE((*policy)->Act(obs.data() + row * 17, 1, 17, alone.data(), 6, true).ok());
    EXPECT_EQ(std::memcmp(alone.data(), batched.data() + row * 6, sizeof(float) * 6), 0)
        << "row " << row;
  }
}

TEST(TorchPolicyTest, MlpWeightsThatDisagreeWithTheOptionsAreRefused) {
  const std::string path = roboloop::testing::MakeTempDir("mlp") + "/policy.safetensors";
  testing::WriteMlp(path, {4, 8, 2}, 1);
  auto wrong_hidden = LoadedTorchRuntime().LoadPolicy(path, "mlp", testing::MlpOptionsJson({4, 9, 2}, "relu"));
  EXPECT_THAT(wrong_hidden.status().ToString(),
              AllOf(HasSubstr(path), HasSubstr("layers.0.weight"), HasSubstr("[9, 4]")));
  auto too_few_layers = LoadedTorchRuntime().LoadPolicy(path, "mlp", testing::MlpOptionsJson({4, 2}, "relu"));
  EXPECT_THAT(too_few_layers.status().ToString(), AllOf(HasSubstr(path), HasSubstr("layers.0")));
  auto bad_activation =
      LoadedTorchRuntime().LoadPolicy(path, "mlp", testing::MlpOptionsJson({4, 8, 2}, "swish"));
  EXPECT_THAT(bad_activation.status().ToString(), AllOf(HasSubstr(path), HasSubstr("swish")));
  auto no_dims = LoadedTorchRuntime().LoadPolicy(path, "mlp", "{\"hidden\": [8]}");
  EXPECT_THAT(no_dims.status().ToString(), AllOf(HasSubstr(path), HasSubstr("obs_dim")));
}

TEST(TorchPolicyTest, WrongCallDimsAreAnErrorNamingTheFile) {
  const std::string path = roboloop::testing::MakeTempDir("mlp") + "/policy.safetensors";
  testing::WriteMlp(path, {4, 8, 2}, 1);
  auto policy = LoadedTorchRuntime().LoadPolicy(path, "mlp", testing::MlpOptionsJson({4, 8, 2}, "relu"));
  ASSERT_TRUE(policy.ok()) << policy.status();
  std::vector<float> obs(10), actions(6);
  EXPECT_THAT((*policy)->Act(obs.data(), 2, 5, actions.data(), 2, false).ToString(),
              AllOf(HasSubstr(path), HasSubstr("takes obs [batch, history 1, obs_dim 4], got [2, 1, 5]")));
  EXPECT_THAT((*policy)->Act(obs.data(), 2, 4, actions.data(), 3, true).ToString(),
              AllOf(HasSubstr(path), HasSubstr("expected [2, 3]")));
}

TEST(TorchPolicyTest, MissingCorruptAndUnknownKindAreClearErrors) {
  const std::string dir = roboloop::testing::MakeTempDir("bad");
  auto missing = LoadedTorchRuntime().LoadPolicy(dir + "/absent.pt", "torchscript", "{}");
  EXPECT_THAT(missing.status().ToString(),
              AllOf(HasSubstr(dir + "/absent.pt"), HasSubstr("no such policy file")));
  const std::string truncated = dir + "/truncated.safetensors";
  testing::WriteMlp(truncated, {4, 64, 2}, 1);
  const std::string bytes = roboloop::testing::ReadWholeFile(truncated);
  std::ofstream(truncated, std::ios::trunc) << bytes.substr(0, bytes.size() / 2);
  auto corrupt =
      LoadedTorchRuntime().LoadPolicy(truncated, "mlp", testing::MlpOptionsJson({4, 64, 2}, "relu"));
  EXPECT_THAT(corrupt.status().ToString(), AllOf(HasSubstr(truncated), HasSubstr("do not fit")));
  auto not_script = LoadedTorchRuntime().LoadPolicy(truncated, "torchscript", "{}");
  EXPECT_THAT(not_script.status().ToString(),
              AllOf(HasSubstr(truncated), HasSubstr("not a loadable TorchScript file")));
  auto kind = LoadedTorchRuntime().LoadPolicy(truncated, "onnx", "{}");
  EXPECT_THAT(kind.status().ToString(),
              AllOf(HasSubstr(truncated), HasSubstr("unknown policy kind")));
  auto bad_json = LoadedTorchRuntime().LoadPolicy(truncated, "mlp", "{obs_dim");
  EXPECT_THAT(bad_json.status().ToString(), AllOf(HasSubstr(truncated), HasSubstr("parse")));
}

}  // namespace
}  // namespace roboloop::train
