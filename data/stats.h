// Normalization statistics per feature: mean, std, min, max, q01, q99, computed exactly over
// every step of every demo, stored in the file under `stats/<feature>/` and exported as JSON.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "data/dataset_reader.h"

namespace roboloop::data {

// Statistics of one feature, one value per element of a step (a scalar feature has one).
struct FeatureStats {
  std::string name;          // feature, e.g. "obs/qpos"
  int64_t count = 0;         // steps the statistics are over
  std::vector<double> mean;  // arithmetic mean
  std::vector<double> std;   // population standard deviation (divides by count)
  std::vector<double> min;   // smallest value
  std::vector<double> max;   // largest value
  std::vector<double> q01;   // 1% quantile, linear interpolation (numpy's default)
  std::vector<double> q99;   // 99% quantile, linear interpolation
};

// Statistics of every vector or scalar feature (per-step rank <= 1), sorted by name. Image-like
// features (per-step rank >= 2) get none: per-pixel statistics are not used for normalization.
using DatasetStats = std::vector<FeatureStats>;

// Limits of the exact computation.
struct StatsOptions {
  // The computation holds one feature of the whole dataset as doubles (8 * steps * elements
  // bytes); a feature needing more is an error rather than a swap storm.
  int64_t memory_limit_bytes = int64_t{2} << 30;
};

// The q-quantile of ascending `sorted` (non-empty) with linear interpolation between ranks.
double Quantile(const std::vector<double>& sorted, double q);

// Computes the statistics of every eligible feature of the reader's file.
absl::StatusOr<DatasetStats> ComputeStats(const DatasetReader& reader, const StatsOptions& options);

// Replaces the `stats` group of the file at `path` with `stats`.
absl::Status StoreStats(const std::string& path, const DatasetStats& stats);

// Validates `path` and computes its statistics; the file is only read.
absl::StatusOr<DatasetStats> ComputeFileStats(const std::string& path, const StatsOptions& options);

// Validates `path`, computes its statistics and stores them in the file.
absl::StatusOr<DatasetStats> ComputeAndStoreStats(const std::string& path,
                                                  const StatsOptions& options);

// Reads the stored statistics of `path`; nullopt when the file has no `stats` group.
absl::StatusOr<std::optional<DatasetStats>> LoadStats(const std::string& path);

// {"<feature>": {"count": n, "mean": [...], "std": [...], "min": [...], "max": [...],
//  "q01": [...], "q99": [...]}, ...}.
nlohmann::json StatsToJson(const DatasetStats& stats);

}  // namespace roboloop::data
