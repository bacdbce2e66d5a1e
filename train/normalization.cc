#include "train/normalization.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "train/feature_rows.h"

namespace roboloop::train {
namespace {

struct MeanStd {
  std::vector<float> mean;
  std::vector<float> std;
};

// Two passes in double (mean, then squared deviations) over every row of `rows`.
MeanStd ComputeMeanStd(const ConcatRows& rows, int64_t steps) {
  const size_t width = static_cast<size_t>(rows.width);
  std::vector<float> row(width);
  std::vector<double> sum(width, 0.0);
  for (int64_t r = 0; r < steps; ++r) {
    rows.CopyRow(r, row.data());
    for (size_t e = 0; e < width; ++e) sum[e] += row[e];
  }
  std::vector<double> mean(width);
  for (size_t e = 0; e < width; ++e) mean[e] = sum[e] / static_cast<double>(steps);
  std::vector<double> squares(width, 0.0);
  for (int64_t r = 0; r < steps; ++r) {
    rows.CopyRow(r, row.data());
    for (size_t e = 0; e < width; ++e) {
      const double deviation = row[e] - mean[e];
      squares[e] += deviation * deviation;
    }
  }
  MeanStd result;
  for (size_t e = 0; e < width; ++e) {
    const double std = std::sqrt(squares[e] / static_cast<double>(steps));
    result.mean.push_back(static_cast<float>(mean[e]));
    result.std.push_back(static_cast<float>(std < kMinNormalizationStd ? 1.0 : std));
  }
  return result;
}

nlohmann::json MeanStdToJson(const std::vector<float>& mean, const std::vector<float>& std) {
  return {{"mean", mean}, {"std", std}};
}

// Reads json[group][key] as an array of numbers; errors name "group.key".
absl::StatusOr<std::vector<float>> ReadFloats(const nlohmann::json& json, const std::string& group,
                                              const std::string& key) {
  const std::string name = absl::StrCat(group, ".", key);
  if (!json.is_object() || !json.contains(group) || !json[group].is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("normalization: missing object '", group, "'"));
  }
  const nlohmann::json& object = json[group];
  if (!object.contains(key)) {
    return absl::InvalidArgumentError(absl::StrCat("normalization: missing key '", name, "'"));
  }
  const nlohmann::json& array = object[key];
  if (!array.is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat("normalization: '", name, "' is not an array"));
  }
  std::vector<float> values;
  for (size_t i = 0; i < array.size(); ++i) {
    if (!array[i].is_number()) {
      return absl::InvalidArgumentError(
          absl::StrCat("normalization: '", name, "'[", i, "] is not a number"));
    }
    values.push_back(array[i].get<float>());
  }
  return values;
}

// Reads json[group] = {"mean": [...], "std": [...]} with equal lengths and positive stds.
absl::StatusOr<MeanStd> ReadMeanStd(const nlohmann::json& json, const std::string& group) {
  MeanStd result;
  ROBOLOOP_ASSIGN_OR_RETURN(result.mean, ReadFloats(json, group, "mean"));
  ROBOLOOP_ASSIGN_OR_RETURN(result.std, ReadFloats(json, group, "std"));
  if (result.mean.size() != result.std.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "normalization: '", group, ".mean' has ", result.mean.size(), " entries but '", group,
        ".std' has ", result.std.size()));
  }
  for (size_t i = 0; i < result.std.size(); ++i) {
    if (!(result.std[i] > 0.0f)) {
      return absl::InvalidArgumentError(absl::StrCat("normalization: '", group, ".std'[", i,
                                                     "] is ", result.std[i], "; must be > 0"));
    }
  }
  return result;
}

}  // namespace

absl::StatusOr<Normalization> NormalizationFromStore(const data::EpisodeStore& store,
                                                     const std::vector<std::string>& obs_features,
                                                     const std::string& action_feature) {
  ROBOLOOP_ASSIGN_OR_RETURN(ConcatRows obs, ConcatFeatures(store, obs_features, "obs feature"));
  ROBOLOOP_ASSIGN_OR_RETURN(ConcatRows actions,
                            ConcatFeatures(store, {action_feature}, "action feature"));
  if (store.total_steps() == 0) {
    return absl::InvalidArgumentError("normalization: the episode store holds no steps");
  }
  MeanStd obs_stats = ComputeMeanStd(obs, store.total_steps());
  MeanStd action_stats = ComputeMeanStd(actions, store.total_steps());
  return Normalization{std::move(obs_stats.mean), std::move(obs_stats.std),
                       std::move(action_stats.mean), std::move(action_stats.std)};
}

nlohmann::json NormalizationToJson(const Normalization& norm) {
  return {{"obs", MeanStdToJson(norm.obs_mean, norm.obs_std)},
          {"action", MeanStdToJson(norm.action_mean, norm.action_std)}};
}

absl::StatusOr<Normalization> NormalizationFromJson(const nlohmann::json& json) {
  ROBOLOOP_ASSIGN_OR_RETURN(MeanStd obs, ReadMeanStd(json, "obs"));
  ROBOLOOP_ASSIGN_OR_RETURN(MeanStd action, ReadMeanStd(json, "action"));
  return Normalization{std::move(obs.mean), std::move(obs.std), std::move(action.mean),
                       std::move(action.std)};
}

}  // namespace roboloop::train
