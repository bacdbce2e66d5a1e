// The loss on a validation split (issue 26, item 3): every (episode, t) window of a store of
// held-out demos (a robomimic file's mask/valid), in store order, evaluated under the
// trainer's current weights. Torch-free; the loss itself is computed in libroboloop_torch.so.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "data/episode_store.h"
#include "train/batch_builder.h"
#include "train/loader.h"
#include "train/normalization.h"
#include "train/torch_runtime.h"

namespace roboloop::train {

// The batches of every window of a validation store, built one at a time by each Loss (so
// that camera frames are not held twice). Immutable.
class ValidationSet {
 public:
  // Batches of options.batch_size windows (the last one smaller) of `store` (which must
  // outlive the set), built with the training run's `norm`, obs/action/image features, history
  // and chunk. Errors as BatchBuilder's (a missing feature, or one of the wrong dtype), and
  // InvalidArgument naming the file when the store has no windows.
  static absl::StatusOr<std::unique_ptr<ValidationSet>> Create(const data::EpisodeStore& store,
                                                               const Normalization& norm,
                                                               const LoaderOptions& options);

  // The mean loss over every window (each batch's loss weighted by its windows) under the
  // current weights of `trainer`, whose noise is seeded by `step`.
  absl::StatusOr<double> Loss(TorchTrainer& trainer, int64_t step) const;

  // Windows evaluated by Loss.
  int64_t windows() const { return windows_->windows(); }

 private:
  ValidationSet(std::unique_ptr<StoreWindows> windows, std::unique_ptr<BatchBuilder> builder, int batch_size)
      : windows_(std::move(windows)), builder_(std::move(builder)), batch_size_(batch_size) {}

  const std::unique_ptr<StoreWindows> windows_;
  const std::unique_ptr<BatchBuilder> builder_;
  const int batch_size_;
};

}  // namespace roboloop::train
