// Which features of a training dataset the policy reads (issue 6; issue 23, docs/vision.md):
// the float32 obs features concatenated into its obs row, the camera frames it sees, and the
// action feature. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "data/dataset_reader.h"
#include "registry/checkpoint_manifest.h"
#include "roboloop/v1/train.pb.h"

namespace roboloop::train {

// The dataset's features as training reads them.
struct DatasetFeatures {
  std::vector<std::string> obs;                  // float obs/<key> features, in row order
  std::vector<std::vector<int64_t>> obs_shapes;  // their per-step shapes
  int64_t obs_dim = 0;                           // floats of one obs row
  int64_t action_dim = 0;                        // floats of one action
  std::vector<std::string> images;               // image features obs/<camera>_image, in camera order
  std::vector<registry::ManifestCamera> cameras; // the camera of each image feature, same order
};

// The features of the dataset `path` (with `layout`) for `config`. The obs features are the
// configured ones (config.obs_features), else the task's key order recorded by `sim collect`
// (env_args env_kwargs.obs_keys), else every obs/* feature in name order; among them, image
// keys (IsObsImageKey: obs/<camera>_image, uint8 [T, H, W, 3]) become cameras and the rest
// the float row. Without configured features every image feature of the file is a camera, in
// the order of env_kwargs.cameras ([{name, camera, ...}]) where recorded, else in name order; a
// camera's MJCF `camera` is the one recorded there, else "". InvalidArgument naming the file
// and the feature: none to train on, a feature the file lacks, a camera env_kwargs.cameras
// names but the file lacks, an image feature that is not uint8 [T, H, W, 3]
// (data::CheckImageFeature).
absl::StatusOr<DatasetFeatures> ReadFeatures(const std::string& path, const data::DatasetLayout& layout,
                                             const v1::TrainConfig& config);

// ReadFeatures of every file of `paths` (a dataset set, at least one): the first file's; every
// other file must train on the same obs and image features with the same dtypes and shapes (the
// first file that differs is named).
absl::StatusOr<DatasetFeatures> ReadSetFeatures(const std::vector<std::string>& paths,
                                                const v1::TrainConfig& config);

// The policy option of `features.cameras` (the torch library's `cameras`, docs/vision.md):
// [{name, width, height}] in camera order; [] for a state-only dataset.
nlohmann::json CamerasOption(const DatasetFeatures& features);

// `options` (complete policy options of a kind, with "kind") with "cameras" set to
// CamerasOption(features) and checked against the kind's schema; unchanged for a state-only
// dataset. InvalidArgument naming the kind, the dataset's image features and the schema's
// complaint (a kind that cannot see), before any training.
absl::StatusOr<nlohmann::json> WithCameras(nlohmann::json options, const DatasetFeatures& features);

// OK when the policy options `options` of checkpoint `ref` see exactly the cameras of `features`
// (CamerasOption's entries, in order; no "cameras" or [] = none). InvalidArgument naming the
// checkpoint, both camera lists and the dataset's image features otherwise.
absl::Status CheckOptionCameras(const nlohmann::json& options, const DatasetFeatures& features,
                                const std::string& ref);

}  // namespace roboloop::train
