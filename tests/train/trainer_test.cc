// The trainer and the trainable policies through the ABI-3 handle (train/torch_runtime.h):
// packed vs padded loss, NaN stop (a rank's own, or a peer's in a two-rank job), a vanished
// peer, exact save/restore, batch-invariant inference of a saved transformer, the
// flow-matching head, bad configs, the device option (the CUDA cases run where LibTorch sees a
// GPU and are skipped elsewhere).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "tests/train/trainer_batches.h"
#include "tests/util/free_port.h"
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
using trainer_testing::kAct;
using trainer_testing::kChunk;
using trainer_testing::kHistory;
using trainer_testing::kObs;
using trainer_testing::OwnedBatch;
using trainer_testing::Policy;

std::unique_ptr<TorchTrainer> MakeTrainer(const nlohmann::json& policy, bool packed = true,
                                          int token_budget = 8192,
                                          const nlohmann::json& optimizer_extra = nlohmann::json::object(),
                                          const std::string& device = "cpu") {
  nlohmann::json optimizer = {{"lr", 1e-3}, {"total_steps", 10}, {"warmup_steps", 2}};
  optimizer.update(optimizer_extra);
  const nlohmann::json config = {{"policy", policy}, {"optimizer", optimizer},
                                 {"packed", packed}, {"token_budget", token_budget},
                                 {"seed", 7}, {"threads", 1}, {"device", device}};
  auto trainer = LoadedTorchRuntime().CreateTrainer(config.dump());
  ROBOLOOP_CHECK_MSG(trainer.ok(), trainer.status().ToString());
  return std::move(*trainer);
}

TEST(TrainerTest, PackedAndPaddedTransformerLossAgreeWithin1e5) {
  const OwnedBatch batch(12, 1);
  // A budget of 40 tokens splits the 12 samples (4..7 tokens each) over several packs.
  auto packed = MakeTrainer(Policy("transformer"), true, 40);
  auto padded = MakeTrainer(Policy("transformer"), false);
  for (int step = 0; step < 3; ++step) {
    auto a = packed->Step(batch.View(), step);
    auto b = padded->Step(batch.View(), step);
    ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
    EXPECT_LE(std::abs(a->loss - b->loss) / std::abs(b->loss), 1e-5) << "step " << step;
    EXPECT_LE(std::abs(a->grad_norm - b->grad_norm) / b->grad_norm, 1e-4) << "step " << step;
  }
}

// Packs of full histories are encoded in place instead of gathered: alone (one pack of the
// whole batch) and next to gathered packs (a 40-token budget: samples 0-4 and 5-9 are full).
TEST(TrainerTest, FullHistoryPacksAgreeWithPaddedWithin1e5) {
  for (const auto& [full, budget] : {std::pair{12, 8192}, std::pair{10, 40}}) {
    const OwnedBatch batch(12, 4, full);
    auto packed = MakeTrainer(Policy("transformer"), true, budget);
    auto padded = MakeTrainer(Policy("transformer"), false);
    for (int step = 0; step < 3; ++step) {
      auto a = packed->Step(batch.View(), step);
      auto b = padded->Step(batch.View(), step);
      ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
      EXPECT_LE(std::abs(a->loss - b->loss) / std::abs(b->loss), 1e-5) << "budget " << budget << " step " << step;
      EXPECT_LE(std::abs(a->grad_norm - b->grad_norm) / b->grad_norm, 1e-4) << "budget " << budget << " step " << step;
    }
  }
}

TEST(TrainerTest, LossDecreasesOnARepeatedBatch) {
  for (const nlohmann::json& policy : {Policy("mlp"), Policy("transformer"), Policy("transformer", true)}) {
    const OwnedBatch batch(16, 2);
    auto trainer = MakeTrainer(policy);
    double first = 0, last = 0;
    for (int step = 0; step < 10; ++step) {
      auto figures = trainer->Step(batch.View(), step);
      ASSERT_TRUE(figures.ok()) << figures.status();
      (step == 0 ? first : last) = figures->loss;
    }
    EXPECT_LT(last, first) << policy.dump();
  }
}

TEST(TrainerTest, NonFiniteLossStopsWithTheStepAndAppliesNoUpdate) {
  OwnedBatch batch(8, 3);
  auto trainer = MakeTrainer(Policy("mlp"));
  ASSERT_TRUE(trainer->Step(batch.View(), 0).ok());
  const std::string dir = testing::MakeTempDir("nan");
  ASSERT_TRUE(trainer->Save(dir + "/before.safetensors", dir + "/before.pt", "{}").ok());
  batch.obs[3] = std::nanf("");
  auto bad = trainer->Step(batch.View(), 1);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(bad.status().message(), AllOf(HasSubstr("step 1"), HasSubstr("nan")));
  ASSERT_TRUE(trainer->Save(dir + "/after.safetensors", dir + "/after.pt", "{}").ok());
  EXPECT_EQ(testing::ReadWholeFile(dir + "/before.safetensors"),
            testing::ReadWholeFile(dir + "/after.safetensors"));
}

TEST(TrainerTest, SavedStateResumesBitwise) {
  const OwnedBatch batch(8, 4);
  const std::string dir = testing::MakeTempDir("resume");
  auto straight = MakeTrainer(Policy("transformer", true));
  std::vector<double> losses;
  for (int step = 0; step < 6; ++step) {
    if (step == 3) {
      ASSERT_TRUE(straight->Save(dir + "/p.safetensors", dir + "/s.pt", "{\"step\": 3}").ok());
    }
    losses.push_back(straight->Step(batch.View(), step)->loss);
  }
  auto resumed = MakeTrainer(Policy("transformer", true));
  auto driver = resumed->LoadState(dir + "/s.pt");
  ASSERT_TRUE(driver.ok()) << driver.status();
  EXPECT_EQ(*driver, "{\"step\": 3}");
  for (int step = 3; step < 6; ++step) {
    EXPECT_EQ(resumed->Step(batch.View(), step)->loss, losses[step]) << "step " << step;
  }
}

TEST(TrainerTest, SavedTransformerActsBatchInvariantlyWithNormalization) {
  const OwnedBatch batch(8, 5);
  auto trainer = MakeTrainer(Policy("transformer", true));
  ASSERT_TRUE(trainer->Step(batch.View(), 0).ok());
  const std::string dir = testing::MakeTempDir("act");
  ASSERT_TRUE(trainer->Save(dir + "/p.safetensors", dir + "/s.pt", "").ok());
  nlohmann::json options = Policy("transformer", true);
  options["normalization"] = {{"obs", {{"mean", std::vector<float>(kObs, 0.5f)}, {"std", std::vector<float>(kObs, 2.0f)}}},
                              {"action", {{"mean", {1.0, -1.0}}, {"std", {0.5, 3.0}}}}};
  auto policy = LoadedTorchRuntime().LoadPolicy(dir + "/p.safetensors", "transformer", options.dump());
  ASSERT_TRUE(policy.ok()) << policy.status();
  std::vector<float> all(batch.batch * kChunk * kAct);
  ASSERT_TRUE((*policy)->ActChunk(batch.obs.data(), batch.history_length.data(), batch.batch, kHistory,
                                  kObs, all.data(), kChunk, kAct, true).ok());
  for (int row : {0, 5}) {
    std::vector<float> alone(kChunk * kAct);
    ASSERT_TRUE((*policy)->ActChunk(batch.obs.data() + row * kHistory * kObs, batch.history_length.data() + row,
                                    1, kHistory, kObs, alone.data(), kChunk, kAct, true).ok());
    for (int i = 0; i < kChunk * kAct; ++i) EXPECT_EQ(alone[i], all[row * kChunk * kAct + i]) << row;
  }
  auto wrong = (*policy)->ActChunk(batch.obs.data(), batch.history_length.data(), 1, 1, kObs,
                                   all.data(), kChunk, kAct, true);
  EXPECT_THAT(wrong.message(), AllOf(HasSubstr("p.safetensors"), HasSubstr("reads 4 observation steps")));
}

// ||a - b|| over all tensors of two policy files.
double Distance(const std::string& a_path, const std::string& b_path) {
  auto a = ReadSafetensors(a_path);
  auto b = ReadSafetensors(b_path);
  double sum = 0;
  for (const auto& [name, tensor] : *b) {
    for (size_t i = 0; i < tensor.values.size(); ++i) {
      const double d = a->at(name).values[i] - tensor.values[i];
      sum += d * d;
    }
  }
  return std::sqrt(sum);
}

TEST(TrainerTest, WarmupThenCosineScheduleReachesTheFloor) {
  const OwnedBatch batch(8, 6);
  auto trainer = MakeTrainer(Policy("mlp"), true, 8192, {{"min_lr_ratio", 0.1}});
  std::vector<double> lrs;
  for (int step = 0; step < 10; ++step) lrs.push_back(trainer->Step(batch.View(), step)->lr);
  EXPECT_DOUBLE_EQ(lrs[0], 0.5e-3);
  EXPECT_DOUBLE_EQ(lrs[1], 1e-3);
  EXPECT_DOUBLE_EQ(lrs[2], 1e-3);
  for (int step = 3; step < 10; ++step) EXPECT_LT(lrs[step], lrs[step - 1]) << step;
  EXPECT_NEAR(lrs[9], 1e-4 + 0.9e-3 * 0.5 * (1 + std::cos(M_PI * 7.0 / 8.0)), 1e-12);
}

TEST(TrainerTest, EmaWeightsLagBehindTheTrainedOnes) {
  const OwnedBatch batch(8, 7);
  const std::string dir = testing::MakeTempDir("ema");
  auto raw = MakeTrainer(Policy("mlp"));
  auto ema = MakeTrainer(Policy("mlp"), true, 8192, {{"ema_decay", 0.9}});
  ASSERT_TRUE(raw->Save(dir + "/init.safetensors", dir + "/init.pt", "").ok());
  for (int step = 0; step < 5; ++step) {
    ASSERT_TRUE(raw->Step(batch.View(), step).ok());
    ASSERT_TRUE(ema->Step(batch.View(), step).ok());
  }
  ASSERT_TRUE(raw->Save(dir + "/raw.safetensors", dir + "/raw.pt", "").ok());
  ASSERT_TRUE(ema->Save(dir + "/ema.safetensors", dir + "/ema.pt", "").ok());
  const double moved = Distance(dir + "/raw.safetensors", dir + "/init.safetensors");
  const double ema_moved = Distance(dir + "/ema.safetensors", dir + "/init.safetensors");
  EXPECT_GT(ema_moved, 0);
  EXPECT_LT(ema_moved, 0.6 * moved);
}

TEST(TrainerTest, Bf16AutocastTrainsCloseToFp32) {
  const OwnedBatch batch(16, 8);
  auto fp32 = MakeTrainer(Policy("transformer"));
  auto bf16 = MakeTrainer(Policy("transformer"), true, 8192, {{"bf16", true}});
  auto a = fp32->Step(batch.View(), 0);
  auto b = bf16->Step(batch.View(), 0);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  EXPECT_NE(a->loss, b->loss) << "autocast had no effect";
  EXPECT_LE(std::abs(a->loss - b->loss) / a->loss, 5e-2);
}

// The fused AdamW (forced on here; the default on CUDA) against LibTorch's loop: both update in
// float32 and differ in rounding only: ten steps' losses stay within 1e-6 relative (measured:
// at most 1e-7).
TEST(TrainerTest, FusedAdamWFollowsTheLoopAdamWWithin1e6) {
  const OwnedBatch batch(16, 14);
  auto loop = MakeTrainer(Policy("transformer"), true, 8192, {{"weight_decay", 0.1}});
  auto fused = MakeTrainer(Policy("transformer"), true, 8192, {{"weight_decay", 0.1}, {"fused", true}});
  bool differs = false;
  for (int step = 0; step < 10; ++step) {
    auto a = loop->Step(batch.View(), step);
    auto b = fused->Step(batch.View(), step);
    ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
    EXPECT_LE(std::abs(a->loss - b->loss) / a->loss, 1e-6) << "step " << step;
    differs = differs || a->loss != b->loss;
  }
  EXPECT_TRUE(differs) << "the fused kernel did not run";
}

TEST(TrainerTest, FusedAdamWStateResumesBitwise) {
  const OwnedBatch batch(8, 15);
  const std::string dir = testing::MakeTempDir("fused_resume");
  auto straight = MakeTrainer(Policy("transformer"), true, 8192, {{"fused", true}});
  std::vector<double> losses;
  for (int step = 0; step < 5; ++step) {
    if (step == 3) {
      ASSERT_TRUE(straight->Save(dir + "/p.safetensors", dir + "/s.pt", "{}").ok());
    }
    losses.push_back(straight->Step(batch.View(), step)->loss);
  }
  auto resumed = MakeTrainer(Policy("transformer"), true, 8192, {{"fused", true}});
  ASSERT_TRUE(resumed->LoadState(dir + "/s.pt").ok());
  for (int step = 3; step < 5; ++step) EXPECT_EQ(resumed->Step(batch.View(), step)->loss, losses[step]) << step;
}

// A trainer with `precision` (and `fp8_scaling` unless empty) on `device`.
std::unique_ptr<TorchTrainer> MakePrecisionTrainer(const std::string& precision, const std::string& scaling,
                                                   const std::string& device = "cpu") {
  nlohmann::json config = {{"policy", Policy("transformer")},
                           {"optimizer", {{"lr", 1e-3}, {"total_steps", 20}, {"warmup_steps", 2}}},
                           {"precision", precision}, {"seed", 7}, {"threads", 1}, {"device", device}};
  if (!scaling.empty()) config["fp8_scaling"] = scaling;
  auto trainer = LoadedTorchRuntime().CreateTrainer(config.dump());
  ROBOLOOP_CHECK_MSG(trainer.ok(), trainer.status().ToString());
  return std::move(*trainer);
}

// FP8 training against the bf16 run of the same seed and batch: 20 steps, each loss within 5 %
// relative (e4m3 weights and activations, e5m2 gradients tensorwise and e4m3 rowwise: 2-6 % error
// per GEMM; measured on the CPU, tensorwise: at most 1.8 %), both runs' losses falling by 30 % or
// more, and FP8 visibly in effect.
void ExpectFp8FollowsBf16(const std::string& scaling, const std::string& device) {
  const OwnedBatch batch(16, 16);
  auto bf16 = MakePrecisionTrainer("bf16", "", device);
  auto fp8 = MakePrecisionTrainer("fp8", scaling, device);
  std::vector<double> bf16_losses, fp8_losses;
  for (int step = 0; step < 20; ++step) {
    auto a = bf16->Step(batch.View(), step);
    auto b = fp8->Step(batch.View(), step);
    ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
    EXPECT_LE(std::abs(a->loss - b->loss) / a->loss, 0.05) << scaling << " step " << step;
    bf16_losses.push_back(a->loss);
    fp8_losses.push_back(b->loss);
  }
  EXPECT_NE(bf16_losses[0], fp8_losses[0]) << "FP8 had no effect";
  EXPECT_LT(fp8_losses.back(), 0.7 * fp8_losses.front());
  EXPECT_LT(bf16_losses.back(), 0.7 * bf16_losses.front());
}

TEST(TrainerTest, Fp8TrainingFollowsTheBf16RunWithin5PercentOnTheCpu) {
  ExpectFp8FollowsBf16("tensorwise", "cpu");
}

TEST(TrainerTest, PrecisionSettingsAreClearErrors) {
  const auto error = [](nlohmann::json config) {
    config["optimizer"] = config.value("optimizer", nlohmann::json::object());
    return std::string(LoadedTorchRuntime().CreateTrainer(config.dump()).status().message());
  };
  EXPECT_THAT(error({{"policy", Policy("transformer")}, {"precision", "fp16"}}),
              AllOf(HasSubstr("trainer option precision 'fp16'"), HasSubstr("fp32, bf16, fp8")));
  EXPECT_THAT(error({{"policy", Policy("transformer")}, {"precision", "fp8"}, {"fp8_scaling", "blockwise"}}),
              AllOf(HasSubstr("fp8_scaling 'blockwise'"), HasSubstr("tensorwise, rowwise")));
  EXPECT_THAT(error({{"policy", Policy("transformer")}, {"precision", "fp8"}, {"fp8_scaling", "rowwise"}}),
              AllOf(HasSubstr("fp8_scaling: rowwise runs on CUDA only"), HasSubstr("fp8_scaling: tensorwise")));
  EXPECT_THAT(error({{"policy", Policy("transformer")}, {"precision", "bf16"}, {"fp8_scaling", "rowwise"}}),
              HasSubstr("fp8_scaling applies to precision: fp8 only"));
  EXPECT_THAT(error({{"policy", Policy("mlp")}, {"precision", "fp8"}}),
              AllOf(HasSubstr("precision: fp8"), HasSubstr("policy mlp")));
  EXPECT_THAT(error({{"policy", Policy("transformer")}, {"precision", "fp8"}, {"optimizer", {{"bf16", true}}}}),
              HasSubstr("optimizer.bf16: true contradicts precision: fp8"));
}

// The older optimizer.bf16 and precision: bf16 are the same setting.
TEST(TrainerTest, OptimizerBf16IsPrecisionBf16) {
  const OwnedBatch batch(8, 17);
  auto old_spelling = MakeTrainer(Policy("transformer"), true, 8192, {{"bf16", true}});
  auto fp32 = MakeTrainer(Policy("transformer"));
  auto bf16 = MakePrecisionTrainer("bf16", "");
  const double expected = old_spelling->Step(batch.View(), 0)->loss;
  EXPECT_NE(fp32->Step(batch.View(), 0)->loss, expected) << "fp32 and bf16 agree: autocast had no effect";
  EXPECT_EQ(bf16->Step(batch.View(), 0)->loss, expected);
}

TEST(TrainerTest, BadConfigsAreClearErrors) {
  nlohmann::json unknown = {{"policy", {{"kind", "diffusion"}, {"obs_dim", 3}, {"action_dim", 1}}}};
  EXPECT_THAT(LoadedTorchRuntime().CreateTrainer(unknown.dump()).status().message(),
              AllOf(HasSubstr("diffusion"), HasSubstr("known: mlp, transformer")));
  nlohmann::json heads = {{"policy", Policy("transformer")}};
  heads["policy"]["heads"] = 3;
  EXPECT_THAT(LoadedTorchRuntime().CreateTrainer(heads.dump()).status().message(), HasSubstr("multiple of heads"));
  nlohmann::json extra = {{"policy", Policy("mlp")}};
  extra["policy"]["layers"] = 2;
  EXPECT_THAT(LoadedTorchRuntime().CreateTrainer(extra.dump()).status().message(),
              HasSubstr("layers is not an option of policy mlp"));
}

// CUDA devices LibTorch sees (0 with Debian's CPU-only LibTorch).
TEST(TrainerTest, DeviceOptionIsCheckedWhenTheTrainerIsCreated) {
  nlohmann::json config = {{"policy", Policy("mlp")}, {"device", "tpu"}};
  EXPECT_THAT(LoadedTorchRuntime().CreateTrainer(config.dump()).status().message(),
              AllOf(HasSubstr("trainer option device 'tpu'"), HasSubstr("cpu, cuda, cuda:N, auto")));
  config["device"] = "cuda:" + std::to_string(CudaDevicesLibTorchSees());
  EXPECT_THAT(LoadedTorchRuntime().CreateTrainer(config.dump()).status().message(),
              AllOf(HasSubstr("needs CUDA device " + std::to_string(CudaDevicesLibTorchSees())),
                    HasSubstr("LibTorch sees " + std::to_string(CudaDevicesLibTorchSees()))));
}

TEST(TrainerTest, AutoDeviceTrainsOnTheCpuWhenNoGpuIsVisible) {
  if (CudaDevicesLibTorchSees() > 0) GTEST_SKIP() << "a GPU is visible: auto picks it";
  const OwnedBatch batch(8, 10);
  auto cpu = MakeTrainer(Policy("transformer", true));
  auto automatic = MakeTrainer(Policy("transformer", true), true, 8192, nlohmann::json::object(), "auto");
  for (int step = 0; step < 3; ++step) {
    EXPECT_EQ(automatic->Step(batch.View(), step)->loss, cpu->Step(batch.View(), step)->loss) << step;
  }
}

// A GPU run against the CPU run of the same seed and batches: the same noise (drawn on the
// CPU), the same initial weights, other kernels; each step's loss within 1e-4 relative.
TEST(TrainerTest, CudaTrainingFollowsTheCpuRunWithin1e4) {
  if (CudaDevicesLibTorchSees() == 0) GTEST_SKIP() << "no CUDA device";
  const OwnedBatch batch(16, 11);
  const std::vector<std::pair<nlohmann::json, bool>> cases = {
      {Policy("mlp"), true}, {Policy("transformer"), true}, {Policy("transformer"), false},
      {Policy("transformer", true), true}};
  for (const auto& [policy, packed] : cases) {
    auto cpu = MakeTrainer(policy, packed);
    auto gpu = MakeTrainer(policy, packed, 8192, nlohmann::json::object(), "cuda");
    for (int step = 0; step < 4; ++step) {
      const double expected = cpu->Step(batch.View(), step)->loss;
      auto actual = gpu->Step(batch.View(), step);
      ASSERT_TRUE(actual.ok()) << actual.status();
      EXPECT_LE(std::abs(actual->loss - expected) / expected, 1e-4) << policy.dump() << " step " << step;
    }
  }
}

// A state saved on the GPU resumes on the GPU (losses within 1e-6: CUDA's index_add backward
// is not bitwise deterministic) and on the CPU (within 1e-4), and its policy file serves.
TEST(TrainerTest, CudaStateResumesOnTheGpuAndOnTheCpu) {
  if (CudaDevicesLibTorchSees() == 0) GTEST_SKIP() << "no CUDA device";
  const OwnedBatch batch(8, 12);
  const std::string dir = testing::MakeTempDir("cuda_resume");
  auto straight = MakeTrainer(Policy("transformer", true), true, 8192, {{"ema_decay", 0.5}}, "cuda");
  std::vector<double> losses;
  for (int step = 0; step < 5; ++step) {
    if (step == 3) {
      ASSERT_TRUE(straight->Save(dir + "/p.safetensors", dir + "/s.pt", "{}").ok());
    }
    losses.push_back(straight->Step(batch.View(), step)->loss);
  }
  for (const std::string device : {"cuda", "cpu"}) {
    auto resumed = MakeTrainer(Policy("transformer", true), true, 8192, {{"ema_decay", 0.5}}, device);
    ASSERT_TRUE(resumed->LoadState(dir + "/s.pt").ok()) << device;
    const double tolerance = device == "cuda" ? 1e-6 : 1e-4;
    for (int step = 3; step < 5; ++step) {
      EXPECT_LE(std::abs(resumed->Step(batch.View(), step)->loss - losses[step]) / losses[step], tolerance)
          << device << " step " << step;
    }
  }
  auto policy = LoadedTorchRuntime().LoadPolicy(dir + "/p.safetensors", "transformer", Policy("transformer", true).dump());
  EXPECT_TRUE(policy.ok()) << policy.status();
}

TEST(TrainerTest, Bf16AutocastOnCudaTrainsCloseToFp32) {
  if (CudaDevicesLibTorchSees() == 0) GTEST_SKIP() << "no CUDA device";
  const OwnedBatch batch(16, 13);
  auto fp32 = MakeTrainer(Policy("transformer"), true, 8192, nlohmann::json::object(), "cuda");
  auto bf16 = MakeTrainer(Policy("transformer"), true, 8192, {{"bf16", true}}, "cuda");
  auto a = fp32->Step(batch.View(), 0);
  auto b = bf16->Step(batch.View(), 0);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  EXPECT_NE(a->loss, b->loss) << "autocast had no effect";
  EXPECT_LE(std::abs(a->loss - b->loss) / a->loss, 5e-2);
}

// FP8 on CUDA, tensorwise and rowwise, against the bf16 run; on a GPU without FP8 the trainer
// refuses precision: fp8 naming the GPU and its compute capability.
TEST(TrainerTest, CudaFp8TrainingFollowsTheBf16RunWithin5Percent) {
  if (CudaDevicesLibTorchSees() == 0) GTEST_SKIP() << "no CUDA device";
  const nlohmann::json config = {{"policy", Policy("transformer")}, {"precision", "fp8"}, {"device", "cuda"}};
  auto probe = LoadedTorchRuntime().CreateTrainer(config.dump());
  if (!probe.ok()) {
    EXPECT_THAT(probe.status().message(), AllOf(HasSubstr("precision: fp8"), HasSubstr("compute capability")));
    GTEST_SKIP() << "this GPU has no FP8: " << probe.status().message();
  }
  ExpectFp8FollowsBf16("tensorwise", "cuda");
  ExpectFp8FollowsBf16("rowwise", "cuda");
}

TEST(TrainerTest, CudaHeadDimTheKernelsDoNotTakeIsAnErrorBeforeTraining) {
  if (CudaDevicesLibTorchSees() == 0) GTEST_SKIP() << "no CUDA device";
  nlohmann::json config = {{"policy", Policy("transformer")}, {"device", "cuda"}};
  config["policy"]["d_model"] = 20;  // head dim 10
  EXPECT_THAT(LoadedTorchRuntime().CreateTrainer(config.dump()).status().message(),
              AllOf(HasSubstr("d_model 20 / heads 2"), HasSubstr("head dim 10")));
}

TEST(TrainerTest, RendezvousTimeoutIsAnErrorWithinTheTimeout) {
  nlohmann::json config = {{"policy", Policy("mlp")},
                           {"distributed", {{"rank", 1}, {"world_size", 2}, {"master_port", 1},
                                            {"timeout_seconds", 2.0}}}};
  const auto start = std::chrono::steady_clock::now();
  auto trainer = LoadedTorchRuntime().CreateTrainer(config.dump());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(trainer.status().code(), absl::StatusCode::kUnavailable) << trainer.status();
  EXPECT_THAT(trainer.status().message(), AllOf(HasSubstr("rendezvous at 127.0.0.1:1"), HasSubstr("rank 1 of 2")));
  EXPECT_LT(seconds, 30);
}

// Two CPU ranks of one job (Gloo over a real TCPStore), in threads of this process.
std::vector<std::unique_ptr<TorchTrainer>> TwoRanks() {
  const int port = testing::FreePort();
  std::vector<absl::StatusOr<std::unique_ptr<TorchTrainer>>> made(2);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&made, port, rank] {
      const nlohmann::json config = {
          {"policy", Policy("mlp")}, {"optimizer", {{"lr", 1e-3}, {"total_steps", 10}}}, {"seed", 7}, {"threads", 1},
          {"distributed", {{"rank", rank}, {"world_size", 2}, {"master_port", port}, {"timeout_seconds", 20.0}}}};
      made[rank] = LoadedTorchRuntime().CreateTrainer(config.dump());
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::vector<std::unique_ptr<TorchTrainer>> ranks;
  for (auto& trainer : made) {
    ROBOLOOP_CHECK_MSG(trainer.ok(), trainer.status().ToString());
    ranks.push_back(*std::move(trainer));
  }
  return ranks;
}

// A rank whose own loss is NaN fails its step on its own (DataLoss); its peer, whose loss is finite, fails on the
// loss averaged with it (Unavailable: maybe another rank's failure), so the launcher blames the first.
TEST(TrainerTest, ANonFiniteLossIsItsRanksOwnFailureAndItsPeersMaybeAConsequence) {
  auto ranks = TwoRanks();
  OwnedBatch good(8, 3), bad(8, 3);
  bad.obs[3] = std::nanf("");
  std::vector<absl::StatusOr<TrainStepFigures>> stepped(2, absl::UnknownError("not run"));
  std::thread peer([&] { stepped[0] = ranks[0]->Step(good.View(), 0); });
  stepped[1] = ranks[1]->Step(bad.View(), 0);
  peer.join();
  EXPECT_EQ(stepped[1].status().code(), absl::StatusCode::kDataLoss) << stepped[1].status();
  EXPECT_THAT(stepped[1].status().message(), AllOf(HasSubstr("step 0"), HasSubstr("loss is nan")));
  EXPECT_EQ(stepped[0].status().code(), absl::StatusCode::kUnavailable) << stepped[0].status();
  EXPECT_THAT(stepped[0].status().message(),
              AllOf(HasSubstr("step 0"), HasSubstr("averaged over the ranks is nan"), HasSubstr("another rank's")));
}

// A step whose peer left the job fails in its collective: Unavailable, maybe the peer's failure.
TEST(TrainerTest, AStepWhosePeerVanishedFailsInItsCollectiveAsMaybeAConsequence) {
  auto ranks = TwoRanks();
  ranks[1].reset();
  const OwnedBatch batch(8, 3);
  const absl::Status lonely = ranks[0]->Step(batch.View(), 0).status();
  EXPECT_EQ(lonely.code(), absl::StatusCode::kUnavailable) << lonely;
  EXPECT_THAT(lonely.message(), AllOf(HasSubstr("step 0"), HasSubstr("across the ranks failed")));
}

}  // namespace
}  // namespace roboloop::train
