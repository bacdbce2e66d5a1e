// Policies that see (issue 23, req 4) through the torch library's C ABI: training steps with
// camera frames (ABI 5 RoboloopTrainBatch images), the image_bytes check, the frames mattering
// to what the policy learns, packing with camera tokens, batch-invariant policy_act_chunk_images
// (TorchPolicy::ActChunkImages), and state-only policies through the same entries. The Cuda case runs where LibTorch sees a GPU and skips elsewhere.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "tests/util/loaded_torch_runtime.h"
#include "tests/util/subprocess.h"
#include "train/torch_runtime.h"

namespace roboloop::train {
namespace {

using ::roboloop::testing::CudaDevicesLibTorchSees;
using ::roboloop::testing::LoadedTorchRuntime;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr int kSide = 16;                        // camera width and height
constexpr int kImageBytes = kSide * kSide * 3;   // one frame
constexpr int kObs = 2, kAct = 2;

nlohmann::json Cameras() { return nlohmann::json::array({{{"name", "agentview"}, {"width", kSide}, {"height", kSide}}}); }

// A small policy of `kind` with `history` and `chunk`, with the 16x16 camera when `sees`.
nlohmann::json Policy(const std::string& kind, bool sees, int history = 1, int chunk = 1) {
  nlohmann::json policy = {{"kind", kind}, {"obs_dim", kObs}, {"action_dim", kAct}, {"history", history},
                           {"chunk", chunk}};
  if (sees) policy.update({{"cameras", Cameras()}, {"encoder_channels", 8}, {"encoder_blocks", 1}, {"keypoints", 8}});
  if (kind == "mlp") {
    policy["hidden"] = {64, 64};
  } else {
    policy.update({{"d_model", 32}, {"layers", 2}, {"heads", 2}, {"ffn", 64}});
  }
  return policy;
}

std::unique_ptr<TorchTrainer> MakeTrainer(const nlohmann::json& policy, const std::string& device = "cpu",
                                          double lr = 3e-3) {
  const nlohmann::json config = {{"policy", policy},
                                 {"optimizer", {{"lr", lr}, {"total_steps", 200}, {"weight_decay", 0.0}}},
                                 {"seed", 3},
                                 {"threads", 1},
                                 {"device", device}};
  auto trainer = LoadedTorchRuntime().CreateTrainer(config.dump());
  ROBOLOOP_CHECK_MSG(trainer.ok(), trainer.status().ToString());
  return std::move(*trainer);
}

// A toy batch whose actions are the position of a bright 4x4 square in the frame (x, y in
// [-1, 1]); the state is the same in every sample, so only the frame tells the action.
struct SquareBatch {
  int batch = 0, history = 1, chunk = 1;
  std::vector<float> obs, actions;
  std::vector<int32_t> history_length;
  std::vector<uint8_t> valid, images;
  int image_bytes = kImageBytes;

  SquareBatch(int n, uint32_t seed, int history_steps = 1, int chunk_steps = 1)
      : batch(n), history(history_steps), chunk(chunk_steps) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> corner(0, kSide - 4);
    images.assign(static_cast<size_t>(n) * kImageBytes, 20);
    for (int b = 0; b < n; ++b) {
      const int row = corner(rng), col = corner(rng);
      for (int r = row; r < row + 4; ++r) {
        for (int c = col; c < col + 4; ++c) {
          for (int k = 0; k < 3; ++k) images[b * kImageBytes + (r * kSide + c) * 3 + k] = 240;
        }
      }
      for (int i = 0; i < history * kObs; ++i) obs.push_back(0.5f);
      for (int s = 0; s < chunk; ++s) {
        actions.push_back(2.0f * col / (kSide - 4) - 1.0f);
        actions.push_back(2.0f * row / (kSide - 4) - 1.0f);
      }
      history_length.push_back(1 + b % history);
      for (int s = 0; s < chunk; ++s) valid.push_back(1);
    }
  }

  RoboloopTrainBatch View(bool with_images = true) const {
    RoboloopTrainBatch view{batch,          history,         chunk,        kObs, kAct, obs.data(), history_length.data(),
                            actions.data(), valid.data(),    0,            nullptr};
    if (with_images) {
      view.image_bytes = image_bytes;
      view.images = images.data();
    }
    return view;
  }
};

// The mean loss of the last 5 of `steps` steps on `batch`.
double FinalLoss(TorchTrainer& trainer, const RoboloopTrainBatch& batch, int steps) {
  double sum = 0;
  for (int step = 0; step < steps; ++step) {
    auto figures = trainer.Step(batch, step);
    EXPECT_TRUE(figures.ok()) << figures.status();
    if (!figures.ok()) return INFINITY;
    if (step >= steps - 5) sum += figures->loss;
  }
  return sum / 5;
}

TEST(VisionPolicyTest, TrainingWithFramesLearnsWhatTheStateCannotTell) {
  const SquareBatch batch(32, 1);
  for (const std::string kind : {"mlp", "transformer"}) {
    auto seeing = MakeTrainer(Policy(kind, true));
    auto blind = MakeTrainer(Policy(kind, false));
    auto first = seeing->Step(batch.View(), 0);
    ASSERT_TRUE(first.ok()) << first.status();
    const double seeing_loss = FinalLoss(*seeing, batch.View(), 60);
    const double blind_loss = FinalLoss(*blind, batch.View(false), 60);
    EXPECT_LT(seeing_loss, 0.5 * first->loss) << kind;
    EXPECT_LT(seeing_loss, 0.5 * blind_loss) << kind << ": the frames should tell the square's position";
  }
}

// Camera tokens join each sample's prefix in the packed varlen sequences: with history lengths
// 1..4 and a 30-token budget (several packs, some gathered), packed and padded losses agree.
TEST(VisionPolicyTest, PackedAndPaddedTransformerWithACameraAgree) {
  const SquareBatch batch(12, 9, 4, 3);
  for (const int budget : {30, 8192}) {
    const nlohmann::json policy = Policy("transformer", true, 4, 3);
    nlohmann::json packed_config = {{"policy", policy}, {"packed", true}, {"token_budget", budget}, {"seed", 5},
                                    {"threads", 1}};
    nlohmann::json padded_config = packed_config;
    padded_config["packed"] = false;
    auto packed = LoadedTorchRuntime().CreateTrainer(packed_config.dump());
    auto padded = LoadedTorchRuntime().CreateTrainer(padded_config.dump());
    ASSERT_TRUE(packed.ok() && padded.ok()) << packed.status() << padded.status();
    for (int step = 0; step < 3; ++step) {
      auto a = (*packed)->Step(batch.View(), step);
      auto b = (*padded)->Step(batch.View(), step);
      ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
      EXPECT_LE(std::abs(a->loss - b->loss) / std::abs(b->loss), 1e-5) << "budget " << budget << " step " << step;
      EXPECT_LE(std::abs(a->grad_norm - b->grad_norm) / b->grad_norm, 1e-4) << "budget " << budget << " step " << step;
    }
  }
}

TEST(VisionPolicyTest, TrainerRefusesImageBytesThatDifferFromTheCameras) {
  const SquareBatch batch(4, 2);
  auto trainer = MakeTrainer(Policy("mlp", true));
  EXPECT_THAT(trainer->Step(batch.View(false), 0).status().message(),
              AllOf(HasSubstr("image_bytes 0"), HasSubstr("agentview 16x16x3"), HasSubstr("768")));
  RoboloopTrainBatch short_rows = batch.View();
  short_rows.image_bytes = kImageBytes - 3;
  EXPECT_THAT(trainer->ValidationLoss(short_rows, 0).status().message(), HasSubstr("image_bytes 765"));
  auto blind = MakeTrainer(Policy("mlp", false));
  EXPECT_THAT(blind->Step(batch.View(), 0).status().message(), AllOf(HasSubstr("image_bytes 768"), HasSubstr("no cameras")));
}

TEST(VisionPolicyTest, BadCamerasOptionIsRefusedNamingIt) {
  nlohmann::json policy = Policy("transformer", true);
  policy["cameras"][0]["width"] = 0;
  const nlohmann::json config = {{"policy", policy}};
  EXPECT_THAT(LoadedTorchRuntime().CreateTrainer(config.dump()).status().message(),
              AllOf(HasSubstr("cameras"), HasSubstr("1..2048")));
}

TEST(VisionPolicyTest, ValidationLossSeesUnshiftedFramesAndIsRepeatable) {
  const SquareBatch batch(8, 3);
  auto trainer = MakeTrainer(Policy("mlp", true));
  auto a = trainer->ValidationLoss(batch.View(), 5);
  auto b = trainer->ValidationLoss(batch.View(), 6);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  EXPECT_EQ(*a, *b) << "validation draws no random shift";
}

std::unique_ptr<TorchPolicy> LoadPolicy(const std::string& path, const nlohmann::json& options) {
  auto policy = LoadedTorchRuntime().LoadPolicy(path, options["kind"].get<std::string>(), options.dump());
  ROBOLOOP_CHECK_MSG(policy.ok(), policy.status().ToString());
  return std::move(*policy);
}

// A transformer with the camera, history 2 and chunk 2, trained 3 steps and saved; its path.
std::string SavedSeeingTransformer(const std::string& dir) {
  const SquareBatch batch(8, 4, 2, 2);
  auto trainer = MakeTrainer(Policy("transformer", true, 2, 2));
  for (int step = 0; step < 3; ++step) EXPECT_TRUE(trainer->Step(batch.View(), step).ok());
  const std::string path = dir + "/policy.safetensors";
  EXPECT_TRUE(trainer->Save(path, dir + "/state.pt", "{}").ok());
  return path;
}

TEST(VisionPolicyTest, ActChunkImagesIsBatchInvariant) {
  const std::string dir = roboloop::testing::MakeTempDir("vision_invariant");
  auto policy = LoadPolicy(SavedSeeingTransformer(dir), Policy("transformer", true, 2, 2));
  constexpr int kBatch = 5, kOut = 2 * kAct;
  const SquareBatch rows(kBatch, 5, 2, 2);
  const auto act = [&](const uint8_t* images, int first, int count, float* out, bool invariant) {
    return policy->ActChunkImages(rows.obs.data() + first * 2 * kObs, rows.history_length.data() + first, images,
                                  kImageBytes, count, 2, kObs, out, 2, kAct, invariant);
  };
  std::vector<float> together(kBatch * kOut), batched(kBatch * kOut);
  ASSERT_TRUE(act(rows.images.data(), 0, kBatch, together.data(), true).ok());
  ASSERT_TRUE(act(rows.images.data(), 0, kBatch, batched.data(), false).ok());
  for (int b = 0; b < kBatch; ++b) {
    std::vector<float> alone(kOut);
    ASSERT_TRUE(act(rows.images.data() + b * kImageBytes, b, 1, alone.data(), true).ok());
    EXPECT_EQ(0, std::memcmp(alone.data(), together.data() + b * kOut, sizeof(float) * kOut))
        << "row " << b << " differs alone and in the batch";
    for (int i = 0; i < kOut; ++i) EXPECT_NEAR(alone[i], batched[b * kOut + i], 1e-4);
  }
  std::vector<float> changed_other(kBatch * kOut);
  std::vector<uint8_t> images = rows.images;
  for (int i = kImageBytes; i < 2 * kImageBytes; ++i) images[i] = 255 - images[i];  // row 1's frame
  ASSERT_TRUE(act(images.data(), 0, kBatch, changed_other.data(), true).ok());
  EXPECT_EQ(0, std::memcmp(changed_other.data(), together.data(), sizeof(float) * kOut)) << "row 0 moved";
  EXPECT_NE(0, std::memcmp(changed_other.data() + kOut, together.data() + kOut, sizeof(float) * kOut))
      << "row 1 ignores its frame";
}

TEST(VisionPolicyTest, ActEntriesRefuseMissingOrMisSizedFrames) {
  const std::string dir = roboloop::testing::MakeTempDir("vision_refuse");
  const std::string path = SavedSeeingTransformer(dir);
  auto policy = LoadPolicy(path, Policy("transformer", true, 2, 2));
  const SquareBatch rows(2, 6, 2, 2);
  std::vector<float> actions(2 * 2 * kAct);
  EXPECT_THAT(policy
                  ->ActChunkImages(rows.obs.data(), rows.history_length.data(), rows.images.data(), kImageBytes - 1,
                                   2, 2, kObs, actions.data(), 2, kAct, false)
                  .message(),
              AllOf(HasSubstr(path), HasSubstr("768 bytes of camera frames"), HasSubstr("767")));
  EXPECT_THAT(policy->ActChunk(rows.obs.data(), rows.history_length.data(), 2, 2, kObs, actions.data(), 2, kAct, false)
                  .message(),
              HasSubstr("use policy_act_chunk_images"));
}

TEST(VisionPolicyTest, StateOnlyPoliciesAnswerBothChunkEntriesAlike) {
  const std::string dir = roboloop::testing::MakeTempDir("vision_state_only");
  auto trainer = MakeTrainer(Policy("mlp", false, 2, 2));
  ASSERT_TRUE(trainer->Save(dir + "/p.safetensors", dir + "/s.pt", "{}").ok());
  auto policy = LoadPolicy(dir + "/p.safetensors", Policy("mlp", false, 2, 2));
  const SquareBatch rows(3, 7, 2, 2);
  std::vector<float> via_images(3 * 2 * kAct), plain(3 * 2 * kAct);
  ASSERT_TRUE(policy->ActChunkImages(rows.obs.data(), rows.history_length.data(), nullptr, 0, 3, 2, kObs,
                                     via_images.data(), 2, kAct, true)
                  .ok());
  ASSERT_TRUE(policy->ActChunk(rows.obs.data(), rows.history_length.data(), 3, 2, kObs, plain.data(), 2, kAct, true).ok());
  EXPECT_EQ(via_images, plain);
  EXPECT_THAT(policy
                  ->ActChunkImages(rows.obs.data(), rows.history_length.data(), rows.images.data(), kImageBytes, 3, 2,
                                   kObs, via_images.data(), 2, kAct, true)
                  .message(),
              HasSubstr("reads 0 bytes of camera frames"));
}

TEST(VisionPolicyTest, CudaTrainingStepWithFramesMatchesTheCpu) {
  if (CudaDevicesLibTorchSees() == 0) GTEST_SKIP() << "LibTorch sees no GPU";
  const SquareBatch batch(16, 8);
  for (const std::string kind : {"mlp", "transformer"}) {
    auto cpu = MakeTrainer(Policy(kind, true), "cpu");
    auto gpu = MakeTrainer(Policy(kind, true), "cuda");
    for (int step = 0; step < 3; ++step) {
      auto a = cpu->Step(batch.View(), step);
      auto b = gpu->Step(batch.View(), step);
      ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
      // LibTorch lets cuDNN convolutions use TF32 (10-bit mantissas), hence the loose bound.
      EXPECT_NEAR(a->loss, b->loss, 2e-2 * std::abs(a->loss)) << kind << " step " << step;
    }
  }
}

}  // namespace
}  // namespace roboloop::train
