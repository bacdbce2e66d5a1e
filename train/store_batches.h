// Batches sampled from an in-memory EpisodeStore: the sampling contract of train/README.md
// ("Loader"). Torch-free.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "data/episode_store.h"
#include "train/batch_builder.h"
#include "train/batch_source.h"

namespace roboloop::train {

// Thread-safe: Build may run on many threads.
class StoreBatches : public BatchSource {
 public:
  // Checks `options` against `store` (see Loader::Create for the errors).
  static absl::StatusOr<std::unique_ptr<StoreBatches>> Create(
      std::shared_ptr<const data::EpisodeStore> store, const Normalization& norm,
      const LoaderOptions& options);

  absl::StatusOr<Batch> Build(int64_t index, int64_t cursor) override;
  int64_t windows() const override { return windows_->windows(); }
  int64_t batches_per_epoch() const override { return batches_per_epoch_; }
  int64_t block_windows() const override { return 0; }

 private:
  StoreBatches(std::shared_ptr<const data::EpisodeStore> store,
               std::unique_ptr<StoreWindows> windows, std::unique_ptr<BatchBuilder> builder,
               const LoaderOptions& options);
  // The permutation of `epoch`, cached for the epochs that batches in [first, last] use.
  std::shared_ptr<const std::vector<int64_t>> Permutation(int64_t epoch, int64_t first_batch,
                                                          int64_t last_batch);

  const std::shared_ptr<const data::EpisodeStore> store_;
  const std::unique_ptr<StoreWindows> windows_;
  const std::unique_ptr<BatchBuilder> builder_;
  const LoaderOptions options_;
  const int64_t batches_per_epoch_;

  absl::Mutex mu_;
  std::map<int64_t, std::shared_ptr<const std::vector<int64_t>>> permutations_ ABSL_GUARDED_BY(mu_);
};

// The loader's shard checks: batch_size, world_size, num_workers, prefetch >= 1, rank inside
// [0, world_size), and one global batch per epoch at least (`windows` of them).
absl::Status CheckShardOptions(const LoaderOptions& options, int64_t windows);

}  // namespace roboloop::train
