#include "train/lookahead_batches.h"

#include <utility>

#include "common/status.h"

namespace roboloop::train {

absl::StatusOr<Batch> LookaheadBatches::Next(int64_t step) {
  std::optional<Batch> current = std::exchange(staged_, std::nullopt);
  if (!current.has_value()) {
    ROBOLOOP_ASSIGN_OR_RETURN(Batch batch, loader_.Next());
    current = std::move(batch);
  }
  if (step + 1 < end_step_) {
    ROBOLOOP_ASSIGN_OR_RETURN(Batch next, loader_.Next());
    // Moving the batch keeps its arrays where they are, so the step finds the staged copy.
    staged_ = std::move(next);
    ROBOLOOP_RETURN_IF_ERROR(trainer_.Stage(BatchView(*staged_), step + 1));
  }
  return std::move(*current);
}

int64_t LookaheadBatches::cursor() const { return loader_.cursor() - (staged_.has_value() ? 1 : 0); }

}  // namespace roboloop::train
