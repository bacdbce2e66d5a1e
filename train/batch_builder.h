// Builds one rank's padded Batch from a list of window indices: the unchecked core of the
// Loader, validated once by Create. Immutable after creation; Build may run on many threads.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "data/episode_store.h"
#include "train/feature_rows.h"
#include "train/loader.h"
#include "train/normalization.h"

namespace roboloop::train {

class BatchBuilder {
 public:
  // Checks the features of `options` in `store`, history/chunk >= 1 and (with normalize)
  // that `norm` matches the obs and action widths. `store` must outlive the builder.
  static absl::StatusOr<std::unique_ptr<BatchBuilder>> Create(const data::EpisodeStore& store,
                                                              const Normalization& norm,
                                                              const LoaderOptions& options);

  // The batch with index `index` whose sample i is window windows[i] (a store row).
  Batch Build(int64_t index, absl::Span<const int64_t> windows) const;
  // Windows (= store rows) available.
  int64_t windows() const { return store_.total_steps(); }
  // Elements of one obs row.
  int obs_dim() const { return static_cast<int>(obs_.width); }
  // Elements of one action row.
  int action_dim() const { return static_cast<int>(actions_.width); }

 private:
  BatchBuilder(const data::EpisodeStore& store, ConcatRows obs, FloatRows actions,
               const Normalization& norm, const LoaderOptions& options);
  void FillSample(int64_t window, int sample, Batch* batch) const;
  // The episode holding store row `row`.
  int64_t EpisodeOfRow(int64_t row) const;

  const data::EpisodeStore& store_;
  const ConcatRows obs_;
  const FloatRows actions_;
  const Normalization norm_;
  const int history_;
  const int chunk_;
  const bool normalize_;
  std::vector<int64_t> episode_offsets_;  // first store row of every episode, ascending
};

}  // namespace roboloop::train
