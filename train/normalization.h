// Per-element normalization of the training inputs: mean and standard deviation of the
// concatenated observation row and of the action row, computed from an EpisodeStore and
// carried in checkpoints as JSON. Torch-free.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/episode_cache.h"
#include "data/episode_store.h"
#include "nlohmann/json.hpp"

namespace roboloop::train {

// Normalized value = (value - mean) / std, element by element.
struct Normalization {
  std::vector<float> obs_mean;     // per element of the concatenated obs row
  std::vector<float> obs_std;      // per element of the concatenated obs row; all > 0
  std::vector<float> action_mean;  // per element of the action row
  std::vector<float> action_std;   // per element of the action row; all > 0
};

// Standard deviations below this are replaced by 1: constant features are centred, not scaled.
inline constexpr double kMinNormalizationStd = 1e-6;

// Exact mean and population standard deviation (divides by the step count) of every element,
// over all steps loaded in `store`, accumulated in double. The obs row concatenates the
// per-step elements of `obs_features` in the given order. Errors: a feature not loaded, a
// feature that is not float32 (named), no obs features, or a store without steps.
absl::StatusOr<Normalization> NormalizationFromStore(const data::EpisodeStore& store,
                                                     const std::vector<std::string>& obs_features,
                                                     const std::string& action_feature);

// NormalizationFromStore over every episode of `cache`, read one at a time, twice (sums,
// then squared deviations), in the cache's episode order: the same values as
// NormalizationFromStore of the store holding those episodes, in a cache-sized memory.
// Errors: a read's, those of NormalizationFromStore.
absl::StatusOr<Normalization> NormalizationFromEpisodes(data::EpisodeCache& cache,
                                                        const std::vector<std::string>& obs_features,
                                                        const std::string& action_feature);

// {"obs": {"mean": [...], "std": [...]}, "action": {"mean": [...], "std": [...]}}.
nlohmann::json NormalizationToJson(const Normalization& norm);

// Parses NormalizationToJson's shape. Errors name the missing or bad key (e.g. "obs.std"):
// absent, not an array of numbers, mean and std of different lengths, or a std entry <= 0.
absl::StatusOr<Normalization> NormalizationFromJson(const nlohmann::json& json);

}  // namespace roboloop::train
