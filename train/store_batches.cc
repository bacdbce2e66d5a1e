#include "train/store_batches.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "train/sampling.h"

namespace roboloop::train {
namespace {

absl::Status CheckAtLeastOne(int value, const char* name) {
  if (value >= 1) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("loader ", name, " must be >= 1, got ", value));
}

}  // namespace

absl::Status CheckShardOptions(const LoaderOptions& options, int64_t windows) {
  ROBOLOOP_RETURN_IF_ERROR(CheckAtLeastOne(options.batch_size, "batch_size"));
  ROBOLOOP_RETURN_IF_ERROR(CheckAtLeastOne(options.world_size, "world_size"));
  ROBOLOOP_RETURN_IF_ERROR(CheckAtLeastOne(options.num_workers, "num_workers"));
  ROBOLOOP_RETURN_IF_ERROR(CheckAtLeastOne(options.prefetch, "prefetch"));
  if (options.rank < 0 || options.rank >= options.world_size) {
    return absl::InvalidArgumentError(absl::StrCat("loader rank ", options.rank,
                                                   " is outside [0, world_size = ",
                                                   options.world_size, ")"));
  }
  const int64_t global = static_cast<int64_t>(options.batch_size) * options.world_size;
  if (global > windows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "global batch batch_size * world_size = ", options.batch_size, " * ",
        options.world_size, " = ", global, " exceeds the ", windows,
        " windows of the dataset (not one full batch per epoch)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<StoreBatches>> StoreBatches::Create(
    std::shared_ptr<const data::EpisodeStore> store, const Normalization& norm,
    const LoaderOptions& options) {
  if (store == nullptr) return absl::InvalidArgumentError("loader: no episode store given");
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<StoreWindows> windows,
                            StoreWindows::Create(*store, options));
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<BatchBuilder> builder,
                            BatchBuilder::Create(windows->rows(), norm, options));
  ROBOLOOP_RETURN_IF_ERROR(CheckShardOptions(options, windows->windows()));
  return std::unique_ptr<StoreBatches>(
      new StoreBatches(std::move(store), std::move(windows), std::move(builder), options));
}

StoreBatches::StoreBatches(std::shared_ptr<const data::EpisodeStore> store,
                           std::unique_ptr<StoreWindows> windows,
                           std::unique_ptr<BatchBuilder> builder, const LoaderOptions& options)
    : store_(std::move(store)),
      windows_(std::move(windows)),
      builder_(std::move(builder)),
      options_(options),
      batches_per_epoch_(windows_->windows() /
                         (static_cast<int64_t>(options.batch_size) * options.world_size)) {}

absl::StatusOr<Batch> StoreBatches::Build(int64_t index, int64_t cursor) {
  const BatchSlice slice = SliceOfBatch(index, batches_per_epoch_, options_.batch_size,
                                        options_.rank, options_.world_size);
  const std::shared_ptr<const std::vector<int64_t>> permutation =
      Permutation(slice.epoch, cursor, cursor + options_.prefetch - 1);
  std::vector<SampleWindow> samples;
  samples.reserve(static_cast<size_t>(slice.size));
  for (int64_t i = slice.begin; i < slice.begin + slice.size; ++i) {
    samples.push_back(windows_->At((*permutation)[i]));
  }
  return builder_->Build(index, samples);
}

std::shared_ptr<const std::vector<int64_t>> StoreBatches::Permutation(int64_t epoch,
                                                                      int64_t first_batch,
                                                                      int64_t last_batch) {
  absl::MutexLock lock(&mu_);
  // Forget the epochs no batch in flight needs (the cursor moved on, or Seek moved it).
  const int64_t first_epoch = first_batch / batches_per_epoch_;
  const int64_t last_epoch = last_batch / batches_per_epoch_;
  for (auto it = permutations_.begin(); it != permutations_.end();) {
    const bool needed = it->first == epoch || (it->first >= first_epoch && it->first <= last_epoch);
    it = needed ? std::next(it) : permutations_.erase(it);
  }
  auto& permutation = permutations_[epoch];
  if (permutation == nullptr) {
    permutation = std::make_shared<const std::vector<int64_t>>(
        EpochPermutation(windows_->windows(), options_.seed, epoch));
  }
  return permutation;
}

}  // namespace roboloop::train
