// Feature views of an EpisodeStore shared by the normalization and the loader: which float32
// features form the obs row and where each one's elements go in that row, and which uint8
// features hold camera frames (docs/vision.md), which are never part of the float row.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "data/episode_store.h"

namespace roboloop::train {

// One float32 feature of a store, as rows of `width` elements.
struct FloatRows {
  std::string name;                // feature name, e.g. "obs/qpos"
  int64_t width = 0;               // elements per step (1 for a scalar feature)
  absl::Span<const float> values;  // total_steps * width values, episodes back to back

  // The `width` elements of store row `row`.
  absl::Span<const float> Row(int64_t row) const {
    return values.subspan(static_cast<size_t>(row * width), static_cast<size_t>(width));
  }
};

// A row built by concatenating several features' rows.
struct ConcatRows {
  std::vector<FloatRows> parts;  // in concatenation order
  int64_t width = 0;             // sum of the parts' widths

  // Writes the concatenated row `row` to out[0, width).
  void CopyRow(int64_t row, float* out) const;
};

// One camera's frames in a store: a uint8 [T, height, width, 3] feature (docs/vision.md).
struct ImageRows {
  std::string name;                   // feature name, e.g. "obs/agentview_image"
  int64_t frame_bytes = 0;            // bytes of one frame: height * width * 3
  absl::Span<const uint8_t> values;   // total_steps * frame_bytes bytes, episodes back to back

  // The frame of store row `row`.
  absl::Span<const uint8_t> Row(int64_t row) const {
    return values.subspan(static_cast<size_t>(row * frame_bytes), static_cast<size_t>(frame_bytes));
  }
};

// Several cameras' frames laid out back to back in one byte row, in order.
struct ConcatImages {
  std::vector<ImageRows> parts;  // in camera order
  int64_t bytes = 0;             // sum of the parts' frame bytes (0 without cameras)

  // Writes the frames of store row `row` to out[0, bytes).
  void CopyRow(int64_t row, uint8_t* out) const;
};

// Whether feature `name` is an observation's camera frames: an image key (data::IsImageKey)
// under obs/ ("obs/agentview_image"; next_obs/ frames are not observations training reads).
bool IsObsImageKey(const std::string& name);

// The camera name of image feature `feature`: the name without "obs/" and "_image"
// ("obs/agentview_image" -> "agentview").
std::string CameraNameOf(const std::string& feature);

// The loaded image features `names` of `store`, in order (none: an empty ConcatImages).
// InvalidArgument naming the file and feature when one is not loaded or is not camera frames
// (data::CheckImageFeature: uint8 [T, H, W, 3]).
absl::StatusOr<ConcatImages> ConcatImageFeatures(const data::EpisodeStore& store,
                                                 const std::vector<std::string>& names);

// The loaded float32 feature `name` of `store`; `role` ("obs feature", "action feature")
// prefixes errors: not loaded (listing the loaded ones) or not float32 (naming the file and
// the dtype).
absl::StatusOr<FloatRows> FloatFeature(const data::EpisodeStore& store, const std::string& name,
                                       const std::string& role);

// FloatFeature for each of `names` (at least one) concatenated in order.
absl::StatusOr<ConcatRows> ConcatFeatures(const data::EpisodeStore& store,
                                          const std::vector<std::string>& names,
                                          const std::string& role);

}  // namespace roboloop::train
