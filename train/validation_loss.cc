#include "train/validation_loss.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "train/batch_builder.h"

namespace roboloop::train {

RoboloopTrainBatch BatchView(const Batch& batch) {
  return RoboloopTrainBatch{batch.batch_size,     batch.history,   batch.chunk,
                            batch.obs_dim,        batch.action_dim, batch.obs.data(),
                            batch.history_length.data(), batch.actions.data(),
                            batch.action_valid.data()};
}

absl::StatusOr<std::unique_ptr<ValidationSet>> ValidationSet::Create(
    const data::EpisodeStore& store, const Normalization& norm, const LoaderOptions& options) {
  if (store.total_steps() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(store.path(), ": the validation split has no steps"));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<StoreWindows> windows,
                            StoreWindows::Create(store, options));
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<BatchBuilder> builder,
                            BatchBuilder::Create(windows->rows(), norm, options));
  std::vector<Batch> batches;
  const int64_t size = std::max(1, options.batch_size);
  for (int64_t first = 0; first < store.total_steps(); first += size) {
    const int64_t count = std::min(size, store.total_steps() - first);
    std::vector<SampleWindow> samples;
    for (int64_t w = first; w < first + count; ++w) samples.push_back(windows->At(w));
    batches.push_back(builder->Build(static_cast<int64_t>(batches.size()), samples));
  }
  return std::unique_ptr<ValidationSet>(new ValidationSet(std::move(batches), store.total_steps()));
}

absl::StatusOr<double> ValidationSet::Loss(TorchTrainer& trainer, int64_t step) const {
  double weighted = 0;
  for (const Batch& batch : batches_) {
    ROBOLOOP_ASSIGN_OR_RETURN(const double loss, trainer.ValidationLoss(BatchView(batch), step));
    weighted += loss * batch.batch_size;
  }
  return weighted / static_cast<double>(windows_);
}

}  // namespace roboloop::train
