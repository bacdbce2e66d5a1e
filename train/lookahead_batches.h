// The driver's half of the input pipeline (issue 22, req 5; issue 28, req 3): before the
// training loop runs step k, the batch of step k + 1 is taken from the Loader and handed to
// the trainer to stage, so that on a GPU its copy (pinned buffer, side stream; see
// train/torch/device_batches.h) runs while step k computes: two batches in flight. On the CPU
// staging does nothing and the steps see the batches they saw without it. Torch-free.
#pragma once

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "train/loader.h"
#include "train/torch_runtime.h"

namespace roboloop::train {

// Not thread-safe; `loader` and `trainer` must outlive it, and nothing else may call the
// loader's Next while it is in use.
class LookaheadBatches {
 public:
  // Batches for the steps before `end_step` (the run's last step + 1).
  LookaheadBatches(Loader& loader, TorchTrainer& trainer, int64_t end_step)
      : loader_(loader), trainer_(trainer), end_step_(end_step) {}

  // The batch of global step `step` (steps asked in increasing order, one at a time): the one
  // staged by the previous call, or the loader's next. Before returning it, takes the next
  // batch from the loader and stages it for step + 1 when step + 1 < end_step. Keep the
  // returned batch (its arrays) unchanged until its step has run. Errors: the loader's, and
  // the trainer's staging error.
  absl::StatusOr<Batch> Next(int64_t step);

  // The loader cursor of the batch Next returns next (what a checkpoint saves so that a
  // resumed run takes the same batches): the loader's cursor, less the staged batch.
  int64_t cursor() const;

 private:
  Loader& loader_;
  TorchTrainer& trainer_;
  const int64_t end_step_;
  std::optional<Batch> staged_;  // the batch of the step after the last one returned
};

}  // namespace roboloop::train
