#include "train/validation_loss.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace roboloop::train {

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
  return std::unique_ptr<ValidationSet>(
      new ValidationSet(std::move(windows), std::move(builder), std::max(1, options.batch_size)));
}

absl::StatusOr<double> ValidationSet::Loss(TorchTrainer& trainer, int64_t step) const {
  double weighted = 0;
  std::vector<SampleWindow> samples;
  for (int64_t first = 0; first < windows(); first += batch_size_) {
    const int64_t count = std::min<int64_t>(batch_size_, windows() - first);
    samples.clear();
    for (int64_t w = first; w < first + count; ++w) samples.push_back(windows_->At(w));
    const Batch batch = builder_->Build(first / batch_size_, samples);
    ROBOLOOP_ASSIGN_OR_RETURN(const double loss, trainer.ValidationLoss(BatchView(batch), step));
    weighted += loss * batch.batch_size;
  }
  return weighted / static_cast<double>(windows());
}

}  // namespace roboloop::train
