// Normalization statistics per feature: mean, std, min, max, q01, q99, computed exactly over
// every step of every demo, stored in the file under `stats/<feature>/` and exported as JSON.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/cancellation.h"
#include "nlohmann/json.hpp"
#include "data/dataset_reader.h"

namespace roboloop::data {

// The statistics a `stats/<feature>/` group holds, one dataset each, in FeatureStats' order.
inline constexpr const char* kStatFieldNames[] = {"mean", "std", "min", "max", "q01", "q99"};

// Statistics of one feature, one value per element of a step (a scalar feature has one); of an
// image key, one value per RGB channel (per_channel).
struct FeatureStats {
  std::string name;          // feature, e.g. "obs/qpos"
  int64_t count = 0;         // steps (of an image key: frames) the statistics are over
  // An image key (IsImageKey): each field holds 3 values (R, G, B), over every pixel of every
  // frame, with pixel values scaled to [0, 1] (value / 255). Such statistics describe the
  // frames; they are not float-feature normalization (a float row never holds image keys).
  bool per_channel = false;
  std::vector<double> mean;  // arithmetic mean
  std::vector<double> std;   // population standard deviation (divides by count)
  std::vector<double> min;   // smallest value
  std::vector<double> max;   // largest value
  std::vector<double> q01;   // 1% quantile, linear interpolation (numpy's default)
  std::vector<double> q99;   // 99% quantile, linear interpolation
};

// Statistics of every vector or scalar feature (per-step rank <= 1) and per-channel statistics of
// every image key, sorted by name. Other features of per-step rank >= 2 get none.
using DatasetStats = std::vector<FeatureStats>;

// Limits of the exact computation.
struct StatsOptions {
  // The computation holds one feature of the whole dataset as doubles (8 * steps * elements
  // bytes); a feature needing more is an error rather than a swap storm.
  int64_t memory_limit_bytes = int64_t{2} << 30;
  // Once cancelled (may be null), the computation stops before its next feature with Cancelled.
  const common::CancellationToken* cancel = nullptr;
};

// The q-quantile of ascending `sorted` (non-empty) with linear interpolation between ranks.
double Quantile(const std::vector<double>& sorted, double q);

// The q-quantile, with Quantile's interpolation, of the values 0..255 counted in `histogram`
// (histogram[v] = occurrences of v; at least one).
double HistogramQuantile(const std::array<int64_t, 256>& histogram, double q);

// Computes the statistics of every eligible feature of the reader's file. Image keys are read a
// block of frames at a time into 256-bin histograms per channel (exact, little memory).
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
//  "q01": [...], "q99": [...]}, ...}; an image key's entry also has "per_channel": true.
nlohmann::json StatsToJson(const DatasetStats& stats);

}  // namespace roboloop::data
