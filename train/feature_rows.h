// Float32 feature views of an EpisodeStore shared by the normalization and the loader: which
// features form the obs row, and where each one's elements go in that row.
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
