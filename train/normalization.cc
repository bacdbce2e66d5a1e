#include "train/normalization.h"

#include <cmath>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "train/feature_rows.h"

namespace roboloop::train {
namespace {

struct MeanStd {
  std::vector<float> mean;
  std::vector<float> std;
};

// Mean and population std of every element of a row, in double over two passes (sums, then
// squared deviations from the mean); each pass must see the same rows in the same order.
class MeanStdPasses {
 public:
  explicit MeanStdPasses(int64_t width)
      : row_(static_cast<size_t>(width)), sum_(row_.size(), 0.0), squares_(row_.size(), 0.0) {}

  // Pass 1: adds rows [0, steps) of `rows`.
  void AddSums(const ConcatRows& rows, int64_t steps) {
    for (int64_t r = 0; r < steps; ++r) {
      rows.CopyRow(r, row_.data());
      for (size_t e = 0; e < row_.size(); ++e) sum_[e] += row_[e];
    }
    steps_ += steps;
  }

  // Pass 2: adds the squared deviations of rows [0, steps) of `rows`.
  void AddSquares(const ConcatRows& rows, int64_t steps) {
    if (mean_.empty()) {
      for (double sum : sum_) mean_.push_back(sum / static_cast<double>(steps_));
    }
    for (int64_t r = 0; r < steps; ++r) {
      rows.CopyRow(r, row_.data());
      for (size_t e = 0; e < row_.size(); ++e) {
        const double deviation = row_[e] - mean_[e];
        squares_[e] += deviation * deviation;
      }
    }
  }

  // The result after both passes; a std below kMinNormalizationStd becomes 1.
  MeanStd Result() const {
    MeanStd result;
    for (size_t e = 0; e < row_.size(); ++e) {
      const double std = std::sqrt(squares_[e] / static_cast<double>(steps_));
      result.mean.push_back(static_cast<float>(mean_[e]));
      result.std.push_back(static_cast<float>(std < kMinNormalizationStd ? 1.0 : std));
    }
    return result;
  }

 private:
  std::vector<float> row_;
  std::vector<double> sum_;
  std::vector<double> squares_;
  std::vector<double> mean_;
  int64_t steps_ = 0;
};

// The obs and action rows of `store`.
absl::StatusOr<std::pair<ConcatRows, ConcatRows>> ObsAndActions(
    const data::EpisodeStore& store, const std::vector<std::string>& obs_features,
    const std::string& action_feature) {
  ROBOLOOP_ASSIGN_OR_RETURN(ConcatRows obs, ConcatFeatures(store, obs_features, "obs feature"));
  ROBOLOOP_ASSIGN_OR_RETURN(ConcatRows actions,
                            ConcatFeatures(store, {action_feature}, "action feature"));
  return std::make_pair(std::move(obs), std::move(actions));
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
  ROBOLOOP_ASSIGN_OR_RETURN(auto rows, ObsAndActions(store, obs_features, action_feature));
  if (store.total_steps() == 0) {
    return absl::InvalidArgumentError("normalization: the episode store holds no steps");
  }
  MeanStdPasses obs(rows.first.width);
  MeanStdPasses actions(rows.second.width);
  obs.AddSums(rows.first, store.total_steps());
  actions.AddSums(rows.second, store.total_steps());
  obs.AddSquares(rows.first, store.total_steps());
  actions.AddSquares(rows.second, store.total_steps());
  MeanStd obs_stats = obs.Result();
  MeanStd action_stats = actions.Result();
  return Normalization{std::move(obs_stats.mean), std::move(obs_stats.std),
                       std::move(action_stats.mean), std::move(action_stats.std)};
}

absl::StatusOr<Normalization> NormalizationFromEpisodes(data::EpisodeCache& cache,
                                                        const std::vector<std::string>& obs_features,
                                                        const std::string& action_feature) {
  if (cache.total_steps() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("normalization: ", cache.path(), " has no steps to train on"));
  }
  std::optional<MeanStdPasses> obs;
  std::optional<MeanStdPasses> actions;
  for (const bool sums : {true, false}) {
    for (int64_t e = 0; e < cache.num_episodes(); ++e) {
      ROBOLOOP_ASSIGN_OR_RETURN(std::shared_ptr<const data::EpisodeStore> store, cache.Get(e));
      ROBOLOOP_ASSIGN_OR_RETURN(auto rows, ObsAndActions(*store, obs_features, action_feature));
      if (!obs.has_value()) {
        obs.emplace(rows.first.width);
        actions.emplace(rows.second.width);
      }
      if (sums) {
        obs->AddSums(rows.first, store->total_steps());
        actions->AddSums(rows.second, store->total_steps());
      } else {
        obs->AddSquares(rows.first, store->total_steps());
        actions->AddSquares(rows.second, store->total_steps());
      }
    }
  }
  MeanStd obs_stats = obs->Result();
  MeanStd action_stats = actions->Result();
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
