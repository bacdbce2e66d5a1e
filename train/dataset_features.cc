#include "train/dataset_features.h"

#include <algorithm>
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "data/spec.h"
#include "registry/policy_kind.h"
#include "train/feature_rows.h"

namespace roboloop::train {
namespace {

int64_t Elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// env_args' env_kwargs member `key`, or null.
nlohmann::json EnvKwarg(const data::DatasetLayout& layout, const char* key) {
  const nlohmann::json env = nlohmann::json::parse(layout.env_args_json, nullptr, false);
  if (!env.is_object() || !env.contains("env_kwargs") || !env["env_kwargs"].is_object()) return nullptr;
  return env["env_kwargs"].value(key, nlohmann::json());
}

// The cameras `sim collect` recorded (env_kwargs.cameras): name -> MJCF camera, and their order.
struct RecordedCameras {
  std::vector<std::string> order;
  std::map<std::string, std::string> mjcf;
};

RecordedCameras ReadRecordedCameras(const data::DatasetLayout& layout) {
  RecordedCameras recorded;
  const nlohmann::json cameras = EnvKwarg(layout, "cameras");
  if (!cameras.is_array()) return recorded;
  for (const nlohmann::json& camera : cameras) {
    if (!camera.is_object() || !camera.contains("name") || !camera["name"].is_string()) continue;
    const std::string name = camera["name"].get<std::string>();
    recorded.order.push_back(name);
    recorded.mjcf[name] = camera.value("camera", std::string());
  }
  return recorded;
}

// The obs features to read: configured, else env_kwargs.obs_keys, else every obs/* feature. Without
// configured features, every image feature follows (recorded camera order, else name order).
absl::StatusOr<std::vector<std::string>> ObsFeatureNames(const std::string& path, const data::DatasetLayout& layout,
                                                         const v1::TrainConfig& config,
                                                         const RecordedCameras& recorded) {
  std::vector<std::string> names(config.obs_features().begin(), config.obs_features().end());
  if (!names.empty()) return names;
  const nlohmann::json keys = EnvKwarg(layout, "obs_keys");
  if (!keys.is_array()) {
    for (const data::FeatureSpec& spec : layout.spec) {
      if (spec.name.rfind("obs/", 0) == 0) names.push_back(spec.name);
    }
    return names;
  }
  for (const nlohmann::json& key : keys) names.push_back("obs/" + key.get<std::string>());
  for (const std::string& camera : recorded.order) {
    const std::string feature = absl::StrCat("obs/", camera, "_image");
    if (data::FindFeature(layout.spec, feature) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": no feature ", feature, " for camera '", camera,
                                                     "' (env_args env_kwargs.cameras names it)"));
    }
    names.push_back(feature);
  }
  for (const data::FeatureSpec& spec : layout.spec) {
    const bool listed = std::find(names.begin(), names.end(), spec.name) != names.end();
    if (IsObsImageKey(spec.name) && !listed) names.push_back(spec.name);
  }
  return names;
}

absl::Status AddImage(const std::string& path, const data::FeatureSpec& spec, const RecordedCameras& recorded,
                      DatasetFeatures& features) {
  if (absl::Status frames = data::CheckImageFeature(spec); !frames.ok()) {
    return Annotate(frames, absl::StrCat(path, ": image feature ", spec.name));
  }
  const std::vector<int64_t>& shape = spec.step_shape;
  const std::string name = CameraNameOf(spec.name);
  auto mjcf = recorded.mjcf.find(name);
  features.images.push_back(spec.name);
  features.cameras.push_back({name, mjcf == recorded.mjcf.end() ? "" : mjcf->second, shape[1], shape[0]});
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DatasetFeatures> ReadFeatures(const std::string& path, const data::DatasetLayout& layout,
                                             const v1::TrainConfig& config) {
  const RecordedCameras recorded = ReadRecordedCameras(layout);
  ROBOLOOP_ASSIGN_OR_RETURN(const std::vector<std::string> names, ObsFeatureNames(path, layout, config, recorded));
  DatasetFeatures features;
  for (const std::string& name : names) {
    const data::FeatureSpec* spec = data::FindFeature(layout.spec, name);
    if (spec == nullptr) return absl::InvalidArgumentError(absl::StrCat(path, ": no feature ", name));
    if (IsObsImageKey(name)) {
      ROBOLOOP_RETURN_IF_ERROR(AddImage(path, *spec, recorded, features));
      continue;
    }
    features.obs.push_back(name);
    features.obs_shapes.push_back(spec->step_shape);
    features.obs_dim += Elements(spec->step_shape);
  }
  if (features.obs.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no float obs/* features to train on"));
  }
  const data::FeatureSpec* action = data::FindFeature(layout.spec, config.action_feature());
  if (action == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no feature ", config.action_feature()));
  }
  features.action_dim = Elements(action->step_shape);
  return features;
}

absl::StatusOr<DatasetFeatures> ReadSetFeatures(const std::vector<std::string>& paths,
                                                const v1::TrainConfig& config) {
  std::unique_ptr<data::DatasetReader> first;
  DatasetFeatures features;
  for (const std::string& path : paths) {
    data::DatasetReader::Options reader_options;
    reader_options.path = path;
    ROBOLOOP_ASSIGN_OR_RETURN(auto reader, data::DatasetReader::Open(reader_options));
    ROBOLOOP_ASSIGN_OR_RETURN(DatasetFeatures found, ReadFeatures(path, reader->layout(), config));
    if (first == nullptr) {
      first = std::move(reader);
      features = std::move(found);
      continue;
    }
    if (found.obs != features.obs || found.images != features.images) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": trains on obs features [", absl::StrJoin(found.obs, ", "), "] and images [",
          absl::StrJoin(found.images, ", "), "], but ", first->path(), " (the set's first file) on [",
          absl::StrJoin(features.obs, ", "), "] and [", absl::StrJoin(features.images, ", "), "]"));
    }
    std::vector<std::string> used = features.obs;
    used.insert(used.end(), features.images.begin(), features.images.end());
    used.push_back(config.action_feature());
    ROBOLOOP_RETURN_IF_ERROR(
        data::CheckSameFeatures(first->path(), first->layout().spec, path, reader->layout().spec, used));
  }
  return features;
}

nlohmann::json CamerasOption(const DatasetFeatures& features) {
  nlohmann::json cameras = nlohmann::json::array();
  for (const registry::ManifestCamera& camera : features.cameras) {
    cameras.push_back({{"name", camera.name}, {"width", camera.width}, {"height", camera.height}});
  }
  return cameras;
}

absl::StatusOr<nlohmann::json> WithCameras(nlohmann::json options, const DatasetFeatures& features) {
  if (features.cameras.empty()) return options;
  const std::string kind_name = options.value("kind", std::string());
  options["cameras"] = CamerasOption(features);
  absl::StatusOr<const registry::PolicyKind*> kind = registry::FindPolicyKind(kind_name);
  absl::StatusOr<nlohmann::json> completed =
      kind.ok() ? registry::CompletePolicyOptions(**kind, options) : absl::StatusOr<nlohmann::json>(kind.status());
  if (!completed.ok()) {
    return Annotate(completed.status(),
                    absl::StrCat("policy '", kind_name, "' on a dataset with cameras (image features [",
                                 absl::StrJoin(features.images, ", "),
                                 "]; list only float obs_features to train it state-only)"));
  }
  return completed;
}

absl::Status CheckOptionCameras(const nlohmann::json& options, const DatasetFeatures& features,
                                const std::string& ref) {
  const nlohmann::json none = nlohmann::json::array();
  const nlohmann::json& mine = options.contains("cameras") ? options["cameras"] : none;
  const nlohmann::json dataset = CamerasOption(features);
  if (mine == dataset) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("checkpoint ", ref, " sees cameras ", mine.dump(),
                                                 ", but the dataset has ", dataset.dump(), " (image features [",
                                                 absl::StrJoin(features.images, ", "), "])"));
}

}  // namespace roboloop::train
