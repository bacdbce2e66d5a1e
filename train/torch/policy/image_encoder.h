// The image encoder of policies that see (issue 23, req 4; docs/vision.md, "Policies that see"):
// per camera a small ResNet-style CNN (a stride-2 convolution stem and residual blocks, each
// convolution followed by GroupNorm and ReLU) and a spatial-softmax keypoint head, as robomimic
// and diffusion policy use. Frames arrive as the raw uint8 image row of docs/vision.md and are
// scaled to [0, 1] (no further normalisation: the GroupNorm after the stem takes care of scale).
// Inside libroboloop_torch.so only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

namespace roboloop::train {

// One camera of a policy's `cameras` option.
struct PolicyCamera {
  std::string name;
  int64_t width = 0;
  int64_t height = 0;
  // Bytes of one frame: height x width x 3.
  int64_t bytes() const { return width * height * 3; }
};

// The encoder's options (schema: registry/policy_kind.h CameraPolicyOptions).
struct ImageEncoderOptions {
  std::vector<PolicyCamera> cameras;  // in the order of the image row; empty = state only
  int64_t channels = 32;              // channels of every convolution
  int64_t blocks = 2;                 // residual blocks after the stem
  int64_t keypoints = 32;             // spatial-softmax keypoints per camera
  // Bytes of one observation's frames, every camera back to back (0 without cameras).
  int64_t image_bytes() const;
};

// Reads cameras, encoder_channels, encoder_blocks and keypoints from a kind's complete options.
// Throws c10::Error naming the option when one is missing or of the wrong type.
ImageEncoderOptions ParseImageEncoderOptions(const nlohmann::json& options);

// Pixels (per side) of the random-shift augmentation: frames are padded by this many pixels by
// edge replication and cropped back at a random offset per sample.
inline constexpr int64_t kRandomShiftPad = 4;

// The expected image coordinates of each channel's softmax over its pixels: features
// [batch, keypoints, height, width] -> [batch, keypoints, 2] holding (x, y), x from -1 (left
// column) to 1 (right column), y from -1 (top row) to 1 (bottom row), in float32.
torch::Tensor SpatialSoftmax(const torch::Tensor& features);

// Frames uint8 [batch, height, width, 3] shifted per sample by integers dy, dx drawn uniformly
// from [-pad, pad] with `generator` (a CPU generator, whatever the frames' device), the edge
// pixels repeated where the shift uncovers the border: the same as padding by `pad` pixels with
// edge replication and cropping back at offset (pad + dy, pad + dx). Same device and dtype.
torch::Tensor RandomShift(const torch::Tensor& frames, int64_t pad, torch::Generator generator);

// The encoders of every camera of a policy. Parameters are named
// cameras.<c>.{stem, stem_norm, blocks.<i>.{conv1, norm1, conv2, norm2}, keypoints}.
class ImageEncoder : public torch::nn::Module {
 public:
  explicit ImageEncoder(const ImageEncoderOptions& options);

  // Keypoints [batch, cameras, 2 * keypoints] (x then y of each keypoint) of the image rows
  // uint8 [batch, image_bytes]. With `augment` each frame is first randomly shifted
  // (RandomShift, kRandomShiftPad) with draws from `generator`, cameras in order. Under a
  // kernels::BatchInvariantScope rows are encoded one at a time, so each output row depends
  // only on its own frames. Throws c10::Error when the rows are not [batch, image_bytes] uint8.
  torch::Tensor Forward(const torch::Tensor& images, bool augment, torch::Generator generator);

  // Features per camera: 2 * keypoints.
  int64_t features() const { return 2 * options_.keypoints; }

 private:
  torch::Tensor EncodeRows(const torch::Tensor& images, bool augment, torch::Generator generator);

  ImageEncoderOptions options_;
  torch::nn::ModuleList cameras_;
};

// The cameras on one line, e.g. "agentview 84x84x3, wrist 64x48x3" ("no cameras" when empty).
std::string DescribeCameras(const ImageEncoderOptions& options);

// Checks that `images` fits a policy whose frames take `image_bytes` per row: uint8
// [batch, image_bytes] when image_bytes > 0, undefined otherwise. Throws c10::Error saying which.
void CheckImageRows(const torch::Tensor& images, int64_t batch, const ImageEncoderOptions& options);

}  // namespace roboloop::train
