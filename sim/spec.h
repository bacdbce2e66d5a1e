// Observation and action specifications shared by tasks and policies.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace roboloop::sim {

// One named, shaped float vector of an observation (e.g. "position" of shape {3}).
struct ArraySpec {
  std::string name;        // key, unique within an ObsSpec
  std::vector<int> shape;  // dimensions; the key holds their product of floats

  // Number of floats in this key.
  int size() const;
  bool operator==(const ArraySpec& other) const;
};

// One camera observation: an RGB image of the scene, uint8 height x width x 3, rows top to
// bottom (docs/vision.md). Datasets store it as `obs/<name>_image` (CameraImageKey).
struct CameraSpec {
  std::string name;    // observation name, unique within an ObsSpec (keys and cameras)
  std::string camera;  // the MJCF camera rendering it; "" = the free camera framing the model
  int width = 0;       // pixels, 1..kMaxCameraSide
  int height = 0;      // pixels, 1..kMaxCameraSide

  // Bytes of one frame: height * width * 3.
  int bytes() const { return height * width * 3; }
  bool operator==(const CameraSpec& other) const;
};

// The largest width or height a camera may ask for.
inline constexpr int kMaxCameraSide = 2048;

// A task's observation: float keys laid out back to back in one flat float row, in order,
// and camera images laid out back to back in one byte row, in order.
struct ObsSpec {
  std::vector<ArraySpec> keys;        // float arrays, in layout order
  std::vector<CameraSpec> cameras;    // images, in layout order; empty for state-only tasks

  // Total floats in one observation row.
  int size() const;
  // Offset of key `name` within the row, or -1 if absent.
  int offset(const std::string& name) const;
  // Total bytes of one observation's images (0 without cameras).
  int image_bytes() const;
  // Byte offset of camera `name` within the image row, or -1 if absent.
  int image_offset(const std::string& name) const;
  bool operator==(const ObsSpec& other) const { return keys == other.keys && cameras == other.cameras; }
};

// The dataset key of a camera's frames, relative to `obs/`: "<name>_image".
std::string CameraImageKey(const CameraSpec& camera);

// OK when `name` (a task's, an observation key's or a camera's) can name a dataset key and a
// file (obs/<name>, obs/<name>_image, env_name): not empty, only ASCII letters, digits, '_', '-'
// and '.', not starting with '.'. Otherwise InvalidArgument "<what> '<name>' cannot be a
// dataset key: ...".
absl::Status CheckDatasetName(const std::string& name, const std::string& what);

// CheckDatasetName for every float key and camera of `spec`; the error starts with `who`.
absl::Status ValidateObsSpecNames(const ObsSpec& spec, const std::string& who);

// OK when `camera` has a non-empty name and a size within 1..kMaxCameraSide; otherwise
// InvalidArgument naming `who`, the camera and what is wrong.
absl::Status ValidateCameraSize(const CameraSpec& camera, const std::string& who);

// A task's action: a flat float vector with per-dimension bounds (actions are clipped).
struct ActionSpec {
  std::vector<float> low;   // lower bound per dimension
  std::vector<float> high;  // upper bound per dimension

  // Number of action dimensions.
  int size() const { return static_cast<int>(low.size()); }
  bool operator==(const ActionSpec& other) const;
};

// OK when `actual` equals `expected`; otherwise InvalidArgument naming `who` and the first
// difference (key name, shape or size).
absl::Status CheckObsSpecMatches(const ObsSpec& expected, const ObsSpec& actual,
                                 const std::string& who);

// OK when `actual` has `expected`'s dimension count, otherwise InvalidArgument naming `who`.
absl::Status CheckActionSpecMatches(const ActionSpec& expected, const ActionSpec& actual,
                                    const std::string& who);

// "name[3x2]" style text for messages; cameras read "name:rgb[84x84]" (height x width).
std::string DescribeObsSpec(const ObsSpec& spec);

}  // namespace roboloop::sim
