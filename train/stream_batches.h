// Batches streamed from episodes read on demand through a bounded EpisodeCache: the streaming
// sampling contract of train/stream_sampling.h and train/README.md ("Streaming"). Torch-free.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "data/episode_cache.h"
#include "train/batch_builder.h"
#include "train/batch_source.h"
#include "train/stream_sampling.h"

namespace roboloop::train {

// Thread-safe: Build may run on many threads.
class StreamBatches : public BatchSource {
 public:
  // The block size of a cache: capacity / (4 * step bytes), at least 1, so that the block
  // being sampled and the next one fit in the cache together with room to spare.
  static int64_t DefaultBlockWindows(const data::EpisodeCache& cache);

  // Checks `options` as Loader::Create does, reads this rank's first episode to check its
  // features against `options` and `norm`, and fails when epoch 0 leaves some rank fewer
  // windows than batch_size. `block_windows` 0 = DefaultBlockWindows(*cache).
  static absl::StatusOr<std::unique_ptr<StreamBatches>> Create(
      std::shared_ptr<data::EpisodeCache> cache, const Normalization& norm,
      const LoaderOptions& options, int64_t block_windows);

  absl::StatusOr<Batch> Build(int64_t index, int64_t cursor) override;
  int64_t windows() const override { return cache_->total_steps(); }
  int64_t batches_per_epoch() const override { return first_epoch_batches_; }
  int64_t block_windows() const override { return sampling_.block_windows; }

 private:
  // A batch's place: its epoch and its index inside the epoch.
  struct Place {
    int64_t epoch = 0;
    int64_t batch = 0;
  };

  StreamBatches(std::shared_ptr<data::EpisodeCache> cache, std::vector<int64_t> lengths,
                std::unique_ptr<BatchBuilder> builder, const LoaderOptions& options,
                const StreamSampling& sampling, int64_t first_epoch_batches);
  // Where global batch `index` lies; FailedPrecondition when an epoch up to it has no batch.
  absl::StatusOr<Place> Locate(int64_t index) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The plan of `epoch`, cached.
  std::shared_ptr<const StreamEpoch> Plan(int64_t epoch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The sampled windows of block `block` of `epoch`, cached.
  std::shared_ptr<const std::vector<EpisodeStep>> Block(int64_t epoch, int64_t block)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The windows of batch `index` in sample order; drops the plans and blocks only batches
  // before `cursor` used.
  absl::StatusOr<std::vector<EpisodeStep>> Windows(int64_t index, int64_t cursor);

  const std::shared_ptr<data::EpisodeCache> cache_;
  const std::vector<int64_t> lengths_;
  const std::unique_ptr<BatchBuilder> builder_;
  const LoaderOptions options_;
  const StreamSampling sampling_;
  const int64_t first_epoch_batches_;

  absl::Mutex mu_;
  std::vector<int64_t> epoch_starts_ ABSL_GUARDED_BY(mu_) = {0};  // first batch of each planned epoch, then the next
  std::map<int64_t, std::shared_ptr<const StreamEpoch>> plans_ ABSL_GUARDED_BY(mu_);
  std::map<std::pair<int64_t, int64_t>, std::shared_ptr<const std::vector<EpisodeStep>>> blocks_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace roboloop::train
