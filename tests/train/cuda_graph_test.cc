// The training step as a CUDA graph replay (train/torch/graphed_step.h, issue 22, req 6) through
// the trainer handle: graphed steps follow eager ones, a non-finite batch applies no update
// under the graph, and a graphed run resumes from its saved state. The CUDA cases run where
// LibTorch sees a GPU (label gpu) and are skipped elsewhere.
//
// Tolerance: a replay runs the eager step's kernels on the same values, with two differences:
// the fused AdamW reads the learning rate from a float32 device scalar (the eager step passes
// a double; 6e-8 relative), and CUDA's atomic-add reductions are not bitwise deterministic
// from run to run in either mode. Both stay far below the 1e-5 relative error per figure and
// per tensor the cases allow.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "tests/train/trainer_batches.h"
#include "tests/util/loaded_torch_runtime.h"
#include "tests/util/subprocess.h"
#include "train/safetensors.h"
#include "train/torch_runtime.h"

namespace roboloop::train {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

using ::roboloop::testing::CudaDevicesLibTorchSees;
using ::roboloop::testing::LoadedTorchRuntime;
using trainer_testing::OwnedBatch;
using trainer_testing::Policy;

constexpr double kTolerance = 1e-5;

nlohmann::json Config(const nlohmann::json& policy, bool cuda_graph, const std::string& device = "cuda") {
  return {{"policy", policy},
          {"optimizer", {{"lr", 1e-3}, {"total_steps", 10}, {"warmup_steps", 2}, {"ema_decay", 0.5}}},
          {"packed", false},
          {"cuda_graph", cuda_graph},
          {"seed", 7},
          {"device", device}};
}

std::unique_ptr<TorchTrainer> MakeTrainer(const nlohmann::json& config) {
  auto trainer = LoadedTorchRuntime().CreateTrainer(config.dump());
  ROBOLOOP_CHECK_MSG(trainer.ok(), trainer.status().ToString());
  return std::move(*trainer);
}

double RelativeError(double actual, double expected) {
  return std::abs(actual - expected) / std::max(std::abs(expected), 1e-12);
}

// The relative error ||a - b|| / ||b|| of every tensor of two policy files.
void ExpectSameWeights(const std::string& actual_path, const std::string& expected_path, const std::string& what) {
  absl::StatusOr<TensorMap> actual = ReadSafetensors(actual_path);
  absl::StatusOr<TensorMap> expected = ReadSafetensors(expected_path);
  ASSERT_TRUE(actual.ok() && expected.ok()) << actual.status() << expected.status();
  ASSERT_EQ(actual->size(), expected->size());
  for (const auto& [name, tensor] : *expected) {
    const std::vector<float>& a = actual->at(name).values;
    ASSERT_EQ(a.size(), tensor.values.size()) << name;
    double difference = 0, norm = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      difference += std::pow(static_cast<double>(a[i]) - tensor.values[i], 2);
      norm += std::pow(static_cast<double>(tensor.values[i]), 2);
    }
    EXPECT_LE(std::sqrt(difference / std::max(norm, 1e-24)), kTolerance) << what << ": " << name;
  }
}

// Two batches taken in turn: the graph's static buffers are refilled at every step.
std::vector<OwnedBatch> Batches() { return {OwnedBatch(16, 21), OwnedBatch(16, 22)}; }

TEST(CudaGraphTest, CudaGraphedStepsFollowEagerStepsWithin1e5) {
  if (CudaDevicesLibTorchSees() == 0) GTEST_SKIP() << "no CUDA device";
  const std::vector<OwnedBatch> batches = Batches();
  const std::string dir = testing::MakeTempDir("cuda_graph_follow");
  for (const nlohmann::json& policy : {Policy("mlp"), Policy("transformer"), Policy("transformer", true)}) {
    auto eager = MakeTrainer(Config(policy, false));
    auto graphed = MakeTrainer(Config(policy, true));
    for (int step = 0; step < 8; ++step) {  // 3 warm-up steps, the capture, 4 replays
      const RoboloopTrainBatch batch = batches[step % 2].View();
      auto expected = eager->Step(batch, step);
      auto actual = graphed->Step(batch, step);
      ASSERT_TRUE(expected.ok() && actual.ok()) << expected.status() << actual.status();
      EXPECT_LE(RelativeError(actual->loss, expected->loss), kTolerance) << policy.dump() << " step " << step;
      EXPECT_LE(RelativeError(actual->grad_norm, expected->grad_norm), kTolerance) << policy.dump() << " step " << step;
      EXPECT_EQ(actual->lr, expected->lr);
    }
    ASSERT_TRUE(eager->Save(dir + "/eager.safetensors", dir + "/eager.pt", "{}").ok());
    ASSERT_TRUE(graphed->Save(dir + "/graphed.safetensors", dir + "/graphed.pt", "{}").ok());
    ExpectSameWeights(dir + "/graphed.safetensors", dir + "/eager.safetensors", policy.dump());
  }
}

TEST(CudaGraphTest, CudaNonFiniteBatchAppliesNoUpdateUnderTheGraph) {
  if (CudaDevicesLibTorchSees() == 0) GTEST_SKIP() << "no CUDA device";
  const std::vector<OwnedBatch> batches = Batches();
  const std::string dir = testing::MakeTempDir("cuda_graph_nan");
  auto tested = MakeTrainer(Config(Policy("transformer", true), true));
  auto untouched = MakeTrainer(Config(Policy("transformer", true), true));
  for (int step = 0; step < 5; ++step) {  // the graph is captured and replayed
    ASSERT_TRUE(tested->Step(batches[step % 2].View(), step).ok());
    ASSERT_TRUE(untouched->Step(batches[step % 2].View(), step).ok());
  }
  ASSERT_TRUE(tested->Save(dir + "/before.safetensors", dir + "/before.pt", "{}").ok());
  OwnedBatch bad = batches[1];
  bad.obs[3] = std::nanf("");
  auto failed = tested->Step(bad.View(), 5);
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(failed.status().message(), AllOf(HasSubstr("step 5"), HasSubstr("nan"), HasSubstr("no update")));
  ASSERT_TRUE(tested->Save(dir + "/after.safetensors", dir + "/after.pt", "{}").ok());
  EXPECT_EQ(testing::ReadWholeFile(dir + "/before.safetensors"), testing::ReadWholeFile(dir + "/after.safetensors"));
  // Weights, moments and step counts as if the batch had never come: the next steps follow.
  for (int step = 5; step < 8; ++step) {
    auto actual = tested->Step(batches[step % 2].View(), step);
    auto expected = untouched->Step(batches[step % 2].View(), step);
    ASSERT_TRUE(actual.ok() && expected.ok()) << actual.status() << expected.status();
    EXPECT_LE(RelativeError(actual->loss, expected->loss), kTolerance) << "step " << step;
  }
}

TEST(CudaGraphTest, CudaGraphedRunResumesFromItsSavedState) {
  if (CudaDevicesLibTorchSees() == 0) GTEST_SKIP() << "no CUDA device";
  const std::vector<OwnedBatch> batches = Batches();
  const std::string dir = testing::MakeTempDir("cuda_graph_resume");
  const nlohmann::json config = Config(Policy("transformer", true), true);
  auto straight = MakeTrainer(config);
  std::vector<double> losses;
  for (int step = 0; step < 9; ++step) {
    if (step == 5) {
      ASSERT_TRUE(straight->Save(dir + "/p5.safetensors", dir + "/s5.pt", "{\"step\": 5}").ok());
    }
    auto figures = straight->Step(batches[step % 2].View(), step);
    ASSERT_TRUE(figures.ok()) << figures.status();
    losses.push_back(figures->loss);
  }
  ASSERT_TRUE(straight->Save(dir + "/straight.safetensors", dir + "/straight.pt", "{}").ok());
  auto resumed = MakeTrainer(config);
  ASSERT_TRUE(resumed->LoadState(dir + "/s5.pt").ok());
  for (int step = 5; step < 9; ++step) {  // warm-up again, then a new capture
    auto figures = resumed->Step(batches[step % 2].View(), step);
    ASSERT_TRUE(figures.ok()) << figures.status();
    EXPECT_LE(RelativeError(figures->loss, losses[step]), kTolerance) << "step " << step;
  }
  ASSERT_TRUE(resumed->Save(dir + "/resumed.safetensors", dir + "/resumed.pt", "{}").ok());
  ExpectSameWeights(dir + "/resumed.safetensors", dir + "/straight.safetensors", "resumed");
}

TEST(CudaGraphTest, CudaGraphOnWithPackedAttentionIsAnErrorNamingPacked) {
  if (CudaDevicesLibTorchSees() == 0) GTEST_SKIP() << "no CUDA device";
  nlohmann::json config = Config(Policy("transformer"), true);
  config["packed"] = true;
  auto trainer = LoadedTorchRuntime().CreateTrainer(config.dump());
  EXPECT_THAT(trainer.status().message(), AllOf(HasSubstr("cuda_graph: on"), HasSubstr("packed: false")));
}

TEST(CudaGraphTest, GraphOnTheCpuIsAnErrorAndOffTrainsAsBefore) {
  auto graphed = LoadedTorchRuntime().CreateTrainer(Config(Policy("mlp"), true, "cpu").dump());
  EXPECT_EQ(graphed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graphed.status().message(), AllOf(HasSubstr("cuda_graph: on"), HasSubstr("the device is the CPU")));
  nlohmann::json bad = Config(Policy("mlp"), true, "cpu");
  bad["cuda_graph"] = "yes";
  EXPECT_THAT(LoadedTorchRuntime().CreateTrainer(bad.dump()).status().message(), HasSubstr("cuda_graph"));
  const std::vector<OwnedBatch> batches = Batches();
  nlohmann::json automatic = Config(Policy("mlp"), false, "cpu");
  automatic.erase("cuda_graph");
  auto off = MakeTrainer(Config(Policy("mlp"), false, "cpu"));
  auto unset = MakeTrainer(automatic);
  for (int step = 0; step < 3; ++step) {
    auto a = off->Step(batches[step % 2].View(), step);
    auto b = unset->Step(batches[step % 2].View(), step);
    ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
    EXPECT_EQ(a->loss, b->loss) << "step " << step;
  }
}

}  // namespace
}  // namespace roboloop::train
