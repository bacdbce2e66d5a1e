// Builds one rank's padded Batch from a list of sample windows: the unchecked core of the
// Loader, validated once by Create. Immutable after creation; Build may run on many threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "data/episode_store.h"
#include "train/feature_rows.h"
#include "train/loader.h"
#include "train/normalization.h"

namespace roboloop::train {

// The obs, action and image rows training reads from one store.
struct TrainingRows {
  ConcatRows obs;       // the obs features, concatenated
  FloatRows actions;    // the action feature
  ConcatImages images;  // the image features, in camera order (none for state-only policies)
};

// The obs, action and image rows of `store` for `options`; errors as ConcatFeatures,
// FloatFeature and ConcatImageFeatures.
absl::StatusOr<TrainingRows> TrainingRowsOf(const data::EpisodeStore& store,
                                            const LoaderOptions& options);

// One sample: step `t` of the episode whose rows are rows[start, start + length), episode
// `episode` of the dataset (Batch::sample_episode).
struct SampleWindow {
  const TrainingRows* rows = nullptr;
  int64_t start = 0;
  int64_t length = 0;
  int64_t t = 0;
  int64_t episode = 0;
};

// The windows of an in-memory store: window w is store row w (episodes back to back).
class StoreWindows {
 public:
  // The training rows of `store` (which must outlive this); errors as TrainingRowsOf.
  static absl::StatusOr<std::unique_ptr<StoreWindows>> Create(const data::EpisodeStore& store,
                                                              const LoaderOptions& options);
  // The sample of window `window` (0 <= window < windows()).
  SampleWindow At(int64_t window) const;
  // Windows: steps of the store.
  int64_t windows() const { return store_.total_steps(); }
  // The store's rows.
  const TrainingRows& rows() const { return rows_; }

 private:
  StoreWindows(const data::EpisodeStore& store, TrainingRows rows);

  const data::EpisodeStore& store_;
  const TrainingRows rows_;
  std::vector<int64_t> episode_offsets_;  // first store row of every episode, ascending
};

class BatchBuilder {
 public:
  // Checks history/chunk >= 1 and (with normalize) that `norm` matches `rows`' obs and action
  // widths, which every later sample must share, as it must share `rows`' image bytes.
  static absl::StatusOr<std::unique_ptr<BatchBuilder>> Create(const TrainingRows& rows,
                                                              const Normalization& norm,
                                                              const LoaderOptions& options);

  // The batch with index `index` whose sample i is samples[i].
  Batch Build(int64_t index, absl::Span<const SampleWindow> samples) const;
  // Elements of one obs row.
  int obs_dim() const { return static_cast<int>(obs_width_); }
  // Elements of one action row.
  int action_dim() const { return static_cast<int>(action_width_); }
  // Bytes of one sample's camera frames (0 without image features).
  int image_bytes() const { return static_cast<int>(image_bytes_); }

 private:
  BatchBuilder(const TrainingRows& rows, const Normalization& norm, const LoaderOptions& options);
  void FillSample(const SampleWindow& window, int sample, Batch* batch) const;

  const int64_t obs_width_;
  const int64_t action_width_;
  const int64_t image_bytes_;
  const Normalization norm_;
  const int history_;
  const int chunk_;
  const bool normalize_;
};

}  // namespace roboloop::train
