#include "train/batch_builder.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace roboloop::train {
namespace {

absl::Status CheckWidth(const std::vector<float>& values, const char* name, int64_t width) {
  if (static_cast<int64_t>(values.size()) == width) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("normalization ", name, " has ", values.size(),
                                                 " entries but the row has ", width,
                                                 " elements"));
}

// (value - mean) / std in place over `count` rows of mean.size() elements.
void NormalizeRows(const std::vector<float>& mean, const std::vector<float>& std, int64_t count,
                   float* rows) {
  const size_t width = mean.size();
  for (int64_t r = 0; r < count; ++r) {
    float* row = rows + r * static_cast<int64_t>(width);
    for (size_t e = 0; e < width; ++e) row[e] = (row[e] - mean[e]) / std[e];
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<BatchBuilder>> BatchBuilder::Create(
    const data::EpisodeStore& store, const Normalization& norm, const LoaderOptions& options) {
  if (options.history < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("loader history must be >= 1, got ", options.history));
  }
  if (options.chunk < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("loader chunk must be >= 1, got ", options.chunk));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(ConcatRows obs,
                            ConcatFeatures(store, options.obs_features, "obs feature"));
  ROBOLOOP_ASSIGN_OR_RETURN(FloatRows actions,
                            FloatFeature(store, options.action_feature, "action feature"));
  if (options.normalize) {
    ROBOLOOP_RETURN_IF_ERROR(CheckWidth(norm.obs_mean, "obs mean", obs.width));
    ROBOLOOP_RETURN_IF_ERROR(CheckWidth(norm.obs_std, "obs std", obs.width));
    ROBOLOOP_RETURN_IF_ERROR(CheckWidth(norm.action_mean, "action mean", actions.width));
    ROBOLOOP_RETURN_IF_ERROR(CheckWidth(norm.action_std, "action std", actions.width));
  }
  return std::unique_ptr<BatchBuilder>(
      new BatchBuilder(store, std::move(obs), std::move(actions), norm, options));
}

BatchBuilder::BatchBuilder(const data::EpisodeStore& store, ConcatRows obs, FloatRows actions,
                           const Normalization& norm, const LoaderOptions& options)
    : store_(store),
      obs_(std::move(obs)),
      actions_(std::move(actions)),
      norm_(norm),
      history_(options.history),
      chunk_(options.chunk),
      normalize_(options.normalize) {
  for (int64_t e = 0; e < store.num_episodes(); ++e) {
    episode_offsets_.push_back(store.episode_offset(e));
  }
}

int64_t BatchBuilder::EpisodeOfRow(int64_t row) const {
  // The last episode starting at or before `row` (empty episodes share the next one's start).
  const auto next = std::upper_bound(episode_offsets_.begin(), episode_offsets_.end(), row);
  return (next - episode_offsets_.begin()) - 1;
}

Batch BatchBuilder::Build(int64_t index, absl::Span<const int64_t> windows) const {
  Batch batch;
  batch.index = index;
  batch.batch_size = static_cast<int>(windows.size());
  batch.history = history_;
  batch.chunk = chunk_;
  batch.obs_dim = obs_dim();
  batch.action_dim = action_dim();
  const size_t samples = windows.size();
  batch.obs.resize(samples * history_ * obs_.width);
  batch.history_length.resize(samples);
  batch.actions.resize(samples * chunk_ * actions_.width);
  batch.action_valid.resize(samples * chunk_);
  for (size_t i = 0; i < samples; ++i) FillSample(windows[i], static_cast<int>(i), &batch);
  if (normalize_) {
    NormalizeRows(norm_.obs_mean, norm_.obs_std, static_cast<int64_t>(samples) * history_,
                  batch.obs.data());
    NormalizeRows(norm_.action_mean, norm_.action_std, static_cast<int64_t>(samples) * chunk_,
                  batch.actions.data());
  }
  return batch;
}

void BatchBuilder::FillSample(int64_t window, int sample, Batch* batch) const {
  const int64_t episode = EpisodeOfRow(window);
  const int64_t start = store_.episode_offset(episode);
  const int64_t length = store_.episode_length(episode);
  const int64_t t = window - start;
  batch->history_length[sample] = static_cast<int32_t>(std::min<int64_t>(history_, t + 1));
  for (int h = 0; h < history_; ++h) {
    // Slot h holds step t - (history - 1) + h; steps before the episode repeat step 0.
    const int64_t step = std::max<int64_t>(0, t - (history_ - 1) + h);
    const int64_t slot = static_cast<int64_t>(sample) * history_ + h;
    obs_.CopyRow(start + step, batch->obs.data() + slot * obs_.width);
  }
  for (int c = 0; c < chunk_; ++c) {
    // Slot c holds action t + c; steps past the episode repeat its last action.
    const int64_t step = std::min<int64_t>(length - 1, t + c);
    const int64_t slot = static_cast<int64_t>(sample) * chunk_ + c;
    const absl::Span<const float> row = actions_.Row(start + step);
    std::copy(row.begin(), row.end(), batch->actions.begin() + slot * actions_.width);
    batch->action_valid[slot] = t + c < length ? 1 : 0;
  }
}

}  // namespace roboloop::train
