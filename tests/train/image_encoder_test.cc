// The image encoder of policies that see (issue 23, req 4; train/torch/policy/image_encoder.h):
// output shapes and parameter names, the spatial softmax's keypoint coordinates, the random
// shift (deterministic per generator seed, a shift with edge replication, different per sample),
// batch-invariant encoding, the check of the image rows, and the fused GroupNorm + ReLU kernel
// against LibTorch's group_norm and relu (forward and gradients).
#include <ATen/CPUGeneratorImpl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "kernels/batch_invariant.h"
#include "train/torch/policy/group_norm_relu.h"
#include "train/torch/policy/image_encoder.h"

namespace roboloop::train {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// One intra-op thread: the encodings here are tiny, and OpenMP threads on a shared machine only
// wait for each other.
class ImageEncoderTest : public ::testing::Test {
 protected:
  void SetUp() override { at::set_num_threads(1); }
};

torch::Generator Seeded(uint64_t seed) { return at::make_generator<at::CPUGeneratorImpl>(seed); }

ImageEncoderOptions TwoCameras() {
  ImageEncoderOptions options;
  options.cameras = {{"agentview", 16, 16}, {"wrist", 12, 8}};
  options.channels = 8;
  options.blocks = 2;
  options.keypoints = 5;
  return options;
}

torch::Tensor RandomRows(int64_t batch, int64_t bytes, uint64_t seed) {
  return torch::randint(0, 256, {batch, bytes}, Seeded(seed), torch::kUInt8);
}

TEST_F(ImageEncoderTest, KeypointsPerCameraAndNamedParameters) {
  ImageEncoder encoder(TwoCameras());
  EXPECT_EQ(TwoCameras().image_bytes(), 16 * 16 * 3 + 12 * 8 * 3);
  const torch::Tensor out = encoder.Forward(RandomRows(3, TwoCameras().image_bytes(), 1), false, Seeded(0));
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{3, 2, 10}));
  EXPECT_EQ(out.scalar_type(), torch::kFloat);
  EXPECT_TRUE((out.abs() <= 1.0).all().item<bool>()) << "keypoints are image coordinates in [-1, 1]";
  std::set<std::string> names;
  for (const auto& item : encoder.named_parameters()) names.insert(item.key());
  for (const char* name : {"cameras.0.stem.weight", "cameras.0.stem_norm.weight", "cameras.1.blocks.1.conv2.weight",
                           "cameras.1.blocks.0.norm1.bias", "cameras.1.keypoints.weight", "cameras.1.keypoints.bias"}) {
    EXPECT_EQ(names.count(name), 1u) << name;
  }
  EXPECT_EQ(names.count("cameras.0.stem.bias"), 0u) << "a convolution before a GroupNorm has no bias";
}

TEST_F(ImageEncoderTest, SpatialSoftmaxKeypointOfOneBrightPixelLandsOnIt) {
  constexpr int64_t kHeight = 6, kWidth = 9;
  for (const auto& [row, col] : {std::pair<int64_t, int64_t>{0, 0}, {5, 8}, {2, 7}, {4, 1}}) {
    torch::Tensor features = torch::full({1, 2, kHeight, kWidth}, -40.0f);
    features.index_put_({0, 0, row, col}, 40.0f);
    features.index_put_({0, 1, kHeight - 1 - row, col}, 40.0f);
    const torch::Tensor points = SpatialSoftmax(features);
    ASSERT_EQ(points.sizes(), (std::vector<int64_t>{1, 2, 2}));
    EXPECT_NEAR(points[0][0][0].item<float>(), -1.0 + 2.0 * col / (kWidth - 1), 1e-5) << row << "," << col;
    EXPECT_NEAR(points[0][0][1].item<float>(), -1.0 + 2.0 * row / (kHeight - 1), 1e-5) << row << "," << col;
    EXPECT_NEAR(points[0][1][1].item<float>(), 1.0 - 2.0 * row / (kHeight - 1), 1e-5) << "second keypoint";
  }
  const torch::Tensor flat = SpatialSoftmax(torch::zeros({2, 3, 5, 4}));
  EXPECT_TRUE(torch::allclose(flat, torch::zeros({2, 3, 2}), 0, 1e-6)) << "a flat map's keypoint is the centre";
}

// Whether `shifted` is `frame` moved by (dy, dx) with edge pixels repeated.
bool IsShiftOf(const torch::Tensor& frame, const torch::Tensor& shifted, int64_t dy, int64_t dx) {
  const int64_t height = frame.size(0), width = frame.size(1);
  const torch::Tensor rows = (torch::arange(height) + dy).clamp(0, height - 1);
  const torch::Tensor cols = (torch::arange(width) + dx).clamp(0, width - 1);
  return torch::equal(frame.index_select(0, rows).index_select(1, cols), shifted);
}

TEST_F(ImageEncoderTest, RandomShiftIsAnEdgeReplicatedShiftDrawnPerSampleFromTheSeed) {
  const torch::Tensor frames = RandomRows(8, 16 * 16 * 3, 2).view({8, 16, 16, 3});
  const torch::Tensor a = RandomShift(frames, kRandomShiftPad, Seeded(11));
  EXPECT_TRUE(torch::equal(a, RandomShift(frames, kRandomShiftPad, Seeded(11)))) << "same seed, same shifts";
  EXPECT_FALSE(torch::equal(a, RandomShift(frames, kRandomShiftPad, Seeded(12)))) << "another seed, other shifts";
  std::set<std::pair<int64_t, int64_t>> shifts;
  for (int64_t b = 0; b < 8; ++b) {
    bool found = false;
    for (int64_t dy = -kRandomShiftPad; dy <= kRandomShiftPad && !found; ++dy) {
      for (int64_t dx = -kRandomShiftPad; dx <= kRandomShiftPad && !found; ++dx) {
        if (IsShiftOf(frames[b], a[b], dy, dx)) {
          found = true;
          shifts.insert({dy, dx});
        }
      }
    }
    EXPECT_TRUE(found) << "sample " << b << " is not a shift of at most " << kRandomShiftPad << " pixels";
  }
  EXPECT_GE(shifts.size(), 3u) << "samples draw their own shifts";
  EXPECT_FALSE(shifts.size() == 1 && shifts.count({0, 0}) == 1) << "nothing moved";
}

TEST_F(ImageEncoderTest, AugmentedEncodingDependsOnTheGeneratorAndPlainOneDoesNot) {
  ImageEncoder encoder(TwoCameras());
  const torch::Tensor rows = RandomRows(4, TwoCameras().image_bytes(), 3);
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(encoder.Forward(rows, false, Seeded(1)), encoder.Forward(rows, false, Seeded(2))));
  EXPECT_TRUE(torch::equal(encoder.Forward(rows, true, Seeded(1)), encoder.Forward(rows, true, Seeded(1))));
  EXPECT_FALSE(torch::equal(encoder.Forward(rows, true, Seeded(1)), encoder.Forward(rows, true, Seeded(2))));
}

TEST_F(ImageEncoderTest, BatchInvariantEncodingGivesEachRowItsAloneResult) {
  ImageEncoder encoder(TwoCameras());
  const torch::Tensor rows = RandomRows(5, TwoCameras().image_bytes(), 4);
  torch::NoGradGuard no_grad;
  kernels::BatchInvariantScope invariant(true);
  const torch::Tensor together = encoder.Forward(rows, false, Seeded(0));
  for (int64_t b = 0; b < 5; ++b) {
    EXPECT_TRUE(torch::equal(together[b], encoder.Forward(rows.narrow(0, b, 1), false, Seeded(0))[0])) << "row " << b;
  }
}

TEST_F(ImageEncoderTest, RowsThatDoNotFitTheCamerasAreRefusedNamingThem) {
  ImageEncoder encoder(TwoCameras());
  EXPECT_THAT(
      [&] { encoder.Forward(RandomRows(2, 100, 5), false, Seeded(0)); }, ::testing::ThrowsMessage<c10::Error>(AllOf(
          HasSubstr("100 bytes per row"), HasSubstr("agentview 16x16x3, wrist 12x8x3"), HasSubstr("1056"))));
  EXPECT_THAT([&] { encoder.Forward(torch::Tensor(), false, Seeded(0)); },
              ::testing::ThrowsMessage<c10::Error>(HasSubstr("carries no images")));
}

TEST_F(ImageEncoderTest, OptionsAreReadFromAKindsCompleteOptions) {
  const nlohmann::json options = {{"cameras", {{{"name", "front"}, {"width", 84}, {"height", 64}}}},
                                  {"encoder_channels", 16},
                                  {"encoder_blocks", 3},
                                  {"keypoints", 24}};
  const ImageEncoderOptions parsed = ParseImageEncoderOptions(options);
  ASSERT_EQ(parsed.cameras.size(), 1u);
  EXPECT_EQ(parsed.cameras[0].name, "front");
  EXPECT_EQ(parsed.image_bytes(), 84 * 64 * 3);
  EXPECT_EQ(parsed.channels, 16);
  EXPECT_EQ(parsed.blocks, 3);
  EXPECT_EQ(parsed.keypoints, 24);
  EXPECT_THAT([&] { ParseImageEncoderOptions({{"cameras", nlohmann::json::array()}}); },
              ::testing::ThrowsMessage<c10::Error>(HasSubstr("encoder_channels")));
}

// ‖a − b‖ / ‖b‖.
double RelativeError(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a - b).norm() / b.norm()).item<double>();
}

TEST_F(ImageEncoderTest, FusedGroupNormReluMatchesLibTorchWithAndWithoutResidual) {
  for (const bool with_residual : {false, true}) {
    torch::manual_seed(7);
    const auto channels_last = at::MemoryFormat::ChannelsLast;
    const torch::Tensor x0 = (torch::randn({3, 16, 7, 5}) * 2 + 0.5).contiguous(channels_last);
    const torch::Tensor w0 = 1 + 0.3 * torch::randn({16}), b0 = 0.2 * torch::randn({16});
    const torch::Tensor r0 = torch::randn({3, 16, 7, 5}).contiguous(channels_last);
    const torch::Tensor up = torch::randn({3, 16, 7, 5});
    std::vector<torch::Tensor> fused_grads, reference_grads;
    torch::Tensor fused_out, reference_out;
    for (const bool fused : {true, false}) {
      torch::Tensor x = x0.clone().requires_grad_(true), w = w0.clone().requires_grad_(true);
      torch::Tensor b = b0.clone().requires_grad_(true), r = r0.clone().requires_grad_(true);
      torch::Tensor out;
      if (fused) {
        out = GroupNormRelu(x, w, b, 4, with_residual ? r : torch::Tensor());
      } else {
        torch::Tensor y = torch::group_norm(x.contiguous(), 4, w, b, 1e-5);
        out = torch::relu(with_residual ? y + r.contiguous() : y);
      }
      (out * up).sum().backward();
      (fused ? fused_out : reference_out) = out.detach();
      (fused ? fused_grads : reference_grads) = {x.grad(), w.grad(), b.grad()};
      if (with_residual) (fused ? fused_grads : reference_grads).push_back(r.grad());
    }
    EXPECT_TRUE(fused_out.is_contiguous(at::MemoryFormat::ChannelsLast));
    EXPECT_LE(RelativeError(fused_out, reference_out), 1e-5) << "residual " << with_residual;
    for (size_t i = 0; i < fused_grads.size(); ++i) {
      EXPECT_LE(RelativeError(fused_grads[i], reference_grads[i]), 1e-5) << "gradient " << i << " residual " << with_residual;
    }
  }
}

TEST_F(ImageEncoderTest, GroupNormReluRefusesChannelsThatDoNotDivideIntoGroups) {
  EXPECT_THAT([&] { GroupNormRelu(torch::zeros({1, 6, 2, 2}), torch::ones({6}), torch::zeros({6}), 4); },
              ::testing::ThrowsMessage<c10::Error>(HasSubstr("channels divisible by 4")));
}

}  // namespace
}  // namespace roboloop::train
