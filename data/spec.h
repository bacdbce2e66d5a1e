// Feature specs: what a dataset holds per step (name, dtype, per-step shape), and the
// robomimic layout's names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "data/dtype.h"

namespace roboloop::data {

// Group holding the demos; attributes `total` and `env_args`.
inline constexpr char kDataGroup[] = "data";
// Group holding split name -> array of demo names.
inline constexpr char kMaskGroup[] = "mask";
// Group holding normalization statistics: stats/<feature>/{mean,std,min,max,q01,q99}.
inline constexpr char kStatsGroup[] = "stats";
// Root attribute holding the lineage JSON (see lineage.h).
inline constexpr char kLineageAttr[] = "roboloop_lineage";
// Required per-demo feature, whose length defines the demo's number of steps.
inline constexpr char kActions[] = "actions";

// Suffix of an image key: `obs/<camera>_image` (and `next_obs/<camera>_image`), robomimic's names.
inline constexpr char kImageSuffix[] = "_image";
// The largest height or width of a stored frame (sim/spec.h kMaxCameraSide).
inline constexpr int64_t kMaxImageSide = 2048;

// One per-step feature of a dataset.
struct FeatureSpec {
  std::string name;                 // path inside a demo group, e.g. "obs/qpos"
  DType dtype = DType::kFloat32;    // element type as stored
  std::vector<int64_t> step_shape;  // shape of one step (the dataset is [T, step_shape...])

  bool operator==(const FeatureSpec& other) const {
    return name == other.name && dtype == other.dtype && step_shape == other.step_shape;
  }
  bool operator!=(const FeatureSpec& other) const { return !(*this == other); }
};

// All features of a dataset, sorted by name.
using DatasetSpec = std::vector<FeatureSpec>;

// True when `name` is an image key: "obs/<key>_image" or "next_obs/<key>_image" with a non-empty
// <key>. Such a feature holds camera frames, uint8 [T, H, W, 3] RGB, rows top to bottom
// (docs/vision.md); CheckImageFeature says whether a spec has that form.
bool IsImageKey(const std::string& name);

// OK when `feature` (an image key) is uint8 with step shape [H, W, 3], 1 <= H, W <=
// kMaxImageSide; otherwise InvalidArgument whose message says what is wrong, e.g.
// "float32 [T, 8, 8, 3], expected uint8 [T, H, W, 3]" (callers put the file and path in front).
absl::Status CheckImageFeature(const FeatureSpec& feature);

// The image keys of `spec` (IsImageKey), in spec order: what a training loader reads as frames.
std::vector<FeatureSpec> ImageFeatures(const DatasetSpec& spec);

// Returns "demo_<index>".
std::string DemoName(int64_t index);

// Parses "demo_<index>" into index; nullopt for any other name.
std::optional<int64_t> ParseDemoIndex(const std::string& name);

// Returns "data/<demo>/<feature>", the path of a feature inside the file.
std::string FeaturePath(const std::string& demo, const std::string& feature);

// Returns the spec in `spec` named `name`, or nullptr.
const FeatureSpec* FindFeature(const DatasetSpec& spec, const std::string& name);

// Describes a spec as "float32 [T, 32]".
std::string DescribeFeature(const FeatureSpec& feature);

// OK when every feature of `names` (empty = every feature of `expected`, and `found` has no
// others) is in `found` with the dtype and step shape it has in `expected`. Otherwise
// InvalidArgument naming `found_path`, the feature and what differs from `expected_path`'s,
// e.g. "b.hdf5: obs/qpos is float32 [T, 4], expected float32 [T, 3] (as in a.hdf5)".
absl::Status CheckSameFeatures(const std::string& expected_path, const DatasetSpec& expected,
                               const std::string& found_path, const DatasetSpec& found,
                               const std::vector<std::string>& names = {});

// JSON array of {name, dtype, shape, image} objects (shape is the per-step shape; image is
// IsImageKey(name)).
nlohmann::json SpecToJson(const DatasetSpec& spec);

}  // namespace roboloop::data
