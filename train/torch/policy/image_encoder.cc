// The image encoder: a ResNet-style CNN with GroupNorm and a spatial-softmax keypoint head.
#include "train/torch/policy/image_encoder.h"

#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/batch_invariant.h"
#include "kernels/host_to_device.h"
#include "train/torch/policy/group_norm_relu.h"

namespace roboloop::train {
namespace {

// GroupNorm over groups of (up to) 8 channels.
torch::nn::GroupNorm Norm(int64_t channels) {
  return torch::nn::GroupNorm(torch::nn::GroupNormOptions(std::gcd<int64_t>(channels, 8), channels));
}

torch::nn::Conv2d Conv3x3(int64_t in, int64_t out, int64_t stride) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false));
}

torch::Tensor NormRelu(const torch::nn::GroupNorm& norm, const torch::Tensor& x,
                       const torch::Tensor& residual = torch::Tensor()) {
  return GroupNormRelu(x, norm->weight, norm->bias, norm->options.num_groups(), residual);
}

// conv-norm-relu-conv-norm plus the input, then ReLU.
class ResidualBlock : public torch::nn::Module {
 public:
  explicit ResidualBlock(int64_t channels)
      : conv1_(register_module("conv1", Conv3x3(channels, channels, 1))),
        norm1_(register_module("norm1", Norm(channels))),
        conv2_(register_module("conv2", Conv3x3(channels, channels, 1))),
        norm2_(register_module("norm2", Norm(channels))) {}

  torch::Tensor Forward(const torch::Tensor& x) {
    return NormRelu(norm2_, conv2_(NormRelu(norm1_, conv1_(x))), x);
  }

 private:
  torch::nn::Conv2d conv1_;
  torch::nn::GroupNorm norm1_;
  torch::nn::Conv2d conv2_;
  torch::nn::GroupNorm norm2_;
};

// One camera: stem, residual blocks, 1x1 keypoint convolution, spatial softmax.
class CameraEncoder : public torch::nn::Module {
 public:
  CameraEncoder(int64_t channels, int64_t blocks, int64_t keypoints)
      : stem_(register_module("stem", Conv3x3(3, channels, 2))),
        stem_norm_(register_module("stem_norm", Norm(channels))),
        keypoints_(register_module("keypoints", torch::nn::Conv2d(torch::nn::Conv2dOptions(channels, keypoints, 1)))) {
    for (int64_t i = 0; i < blocks; ++i) blocks_->push_back(std::make_shared<ResidualBlock>(channels));
    register_module("blocks", blocks_);
  }

  // frames uint8 [batch, height, width, 3] -> [batch, 2 * keypoints]. Activations stay
  // channels-last, as the frames are: LibTorch's CPU convolutions run about twice as fast on
  // that layout, and GroupNormRelu's fused kernel takes it.
  torch::Tensor Forward(const torch::Tensor& frames) {
    torch::Tensor x =
        frames.permute({0, 3, 1, 2}).to(torch::kFloat).contiguous(at::MemoryFormat::ChannelsLast).div_(255.0);
    x = NormRelu(stem_norm_, stem_(x));
    for (size_t i = 0; i < blocks_->size(); ++i) x = blocks_[i]->as<ResidualBlock>()->Forward(x);
    const torch::Tensor points = SpatialSoftmax(keypoints_(x));
    return points.reshape({points.size(0), -1});
  }

 private:
  torch::nn::Conv2d stem_;
  torch::nn::GroupNorm stem_norm_;
  torch::nn::Conv2d keypoints_;
  torch::nn::ModuleList blocks_;
};

int64_t PositiveOption(const nlohmann::json& options, const char* name) {
  TORCH_CHECK(options.contains(name) && options[name].is_number_integer() && options[name].get<int64_t>() > 0,
              "policy option ", name, " must be a positive integer");
  return options[name].get<int64_t>();
}

PolicyCamera ParseCamera(const nlohmann::json& camera) {
  TORCH_CHECK(camera.is_object() && camera.contains("name") && camera["name"].is_string() &&
                  camera.contains("width") && camera["width"].is_number_integer() && camera.contains("height") &&
                  camera["height"].is_number_integer(),
              "policy option cameras: each camera must be {name, width, height}, got ", camera.dump());
  PolicyCamera parsed{camera["name"].get<std::string>(), camera["width"].get<int64_t>(),
                      camera["height"].get<int64_t>()};
  TORCH_CHECK(parsed.width > 0 && parsed.height > 0, "policy option cameras: camera ", parsed.name,
              " has size ", parsed.width, "x", parsed.height);
  return parsed;
}

}  // namespace

std::string DescribeCameras(const ImageEncoderOptions& options) {
  std::vector<std::string> cameras;
  for (const PolicyCamera& c : options.cameras) {
    cameras.push_back(absl::StrCat(c.name, " ", c.width, "x", c.height, "x3"));
  }
  return cameras.empty() ? "no cameras" : absl::StrJoin(cameras, ", ");
}

int64_t ImageEncoderOptions::image_bytes() const {
  int64_t bytes = 0;
  for (const PolicyCamera& camera : cameras) bytes += camera.bytes();
  return bytes;
}

ImageEncoderOptions ParseImageEncoderOptions(const nlohmann::json& options) {
  ImageEncoderOptions parsed;
  TORCH_CHECK(options.contains("cameras") && options["cameras"].is_array(),
              "policy option cameras must be an array of {name, width, height}");
  for (const nlohmann::json& camera : options["cameras"]) parsed.cameras.push_back(ParseCamera(camera));
  parsed.channels = PositiveOption(options, "encoder_channels");
  parsed.blocks = PositiveOption(options, "encoder_blocks");
  parsed.keypoints = PositiveOption(options, "keypoints");
  return parsed;
}

torch::Tensor SpatialSoftmax(const torch::Tensor& features) {
  TORCH_CHECK(features.dim() == 4, "spatial softmax takes [batch, keypoints, height, width], got ",
              features.sizes());
  const int64_t batch = features.size(0), keypoints = features.size(1);
  const int64_t height = features.size(2), width = features.size(3);
  const auto options = features.options().dtype(torch::kFloat);
  const torch::Tensor xs = torch::linspace(-1.0, 1.0, width, options).view({1, width}).expand({height, width});
  const torch::Tensor ys = torch::linspace(-1.0, 1.0, height, options).view({height, 1}).expand({height, width});
  const torch::Tensor grid = torch::stack({xs.reshape({-1}), ys.reshape({-1})}, 1);  // [pixels, 2]
  const torch::Tensor weights =
      torch::softmax(features.to(torch::kFloat).reshape({batch, keypoints, height * width}), -1);
  return torch::matmul(weights, grid);
}

torch::Tensor RandomShift(const torch::Tensor& frames, int64_t pad, torch::Generator generator) {
  TORCH_CHECK(frames.dim() == 4 && frames.size(3) == 3, "random shift takes frames [batch, height, width, 3], got ",
              frames.sizes());
  const int64_t batch = frames.size(0), height = frames.size(1), width = frames.size(2);
  // Drawn on the CPU generator (the same shifts on every device); the pixel indices are built
  // where the frames are, so only the [batch, 2] shifts cross to a GPU.
  const torch::Tensor shifts = kernels::OnDeviceWithoutWaiting(
      torch::randint(-pad, pad + 1, {batch, 2}, generator, torch::kLong), frames.device());
  const auto on_device = torch::TensorOptions().dtype(torch::kLong).device(frames.device());
  const torch::Tensor rows =
      (torch::arange(height, on_device).view({1, height}) + shifts.select(1, 0).view({batch, 1})).clamp(0, height - 1);
  const torch::Tensor cols =
      (torch::arange(width, on_device).view({1, width}) + shifts.select(1, 1).view({batch, 1})).clamp(0, width - 1);
  const torch::Tensor first_row = torch::arange(batch, on_device).view({batch, 1, 1}) * height;
  const torch::Tensor pixel = (first_row + rows.view({batch, height, 1})) * width + cols.view({batch, 1, width});
  const torch::Tensor flat = frames.reshape({batch * height * width, 3});
  return flat.index_select(0, pixel.reshape({-1})).view(frames.sizes());
}

ImageEncoder::ImageEncoder(const ImageEncoderOptions& options) : options_(options) {
  for (size_t c = 0; c < options.cameras.size(); ++c) {
    cameras_->push_back(std::make_shared<CameraEncoder>(options.channels, options.blocks, options.keypoints));
  }
  register_module("cameras", cameras_);
}

torch::Tensor ImageEncoder::Forward(const torch::Tensor& images, bool augment, torch::Generator generator) {
  CheckImageRows(images, images.defined() ? images.size(0) : 0, options_);
  if (!kernels::BatchInvariantModeEnabled() || images.size(0) <= 1) return EncodeRows(images, augment, generator);
  std::vector<torch::Tensor> rows;
  for (int64_t b = 0; b < images.size(0); ++b) rows.push_back(EncodeRows(images.narrow(0, b, 1), augment, generator));
  return torch::cat(rows, 0);
}

torch::Tensor ImageEncoder::EncodeRows(const torch::Tensor& images, bool augment, torch::Generator generator) {
  const int64_t batch = images.size(0);
  std::vector<torch::Tensor> features;
  int64_t offset = 0;
  for (size_t c = 0; c < options_.cameras.size(); ++c) {
    const PolicyCamera& camera = options_.cameras[c];
    torch::Tensor frames = images.narrow(1, offset, camera.bytes()).view({batch, camera.height, camera.width, 3});
    if (augment) frames = RandomShift(frames, kRandomShiftPad, generator);
    features.push_back(cameras_[c]->as<CameraEncoder>()->Forward(frames));
    offset += camera.bytes();
  }
  return torch::stack(features, 1);
}

void CheckImageRows(const torch::Tensor& images, int64_t batch, const ImageEncoderOptions& options) {
  const int64_t expected = options.image_bytes();
  if (expected == 0) {
    TORCH_CHECK(!images.defined() || images.numel() == 0, "the policy has no cameras but the call carries ",
                images.numel(), " image bytes");
    return;
  }
  TORCH_CHECK(images.defined(), "the policy sees ", DescribeCameras(options), " (", expected,
              " bytes per row) but the call carries no images");
  TORCH_CHECK(images.scalar_type() == torch::kUInt8 && images.dim() == 2 && images.size(0) == batch &&
                  images.size(1) == expected,
              "images of ", images.dim() == 2 ? images.size(1) : -1, " bytes per row differ from the policy's ",
              expected, " (", DescribeCameras(options), "; frames are height x width x 3 uint8)");
}

}  // namespace roboloop::train
