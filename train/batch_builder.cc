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

absl::StatusOr<TrainingRows> TrainingRowsOf(const data::EpisodeStore& store,
                                            const LoaderOptions& options) {
  TrainingRows rows;
  ROBOLOOP_ASSIGN_OR_RETURN(rows.obs, ConcatFeatures(store, options.obs_features, "obs feature"));
  ROBOLOOP_ASSIGN_OR_RETURN(rows.actions,
                            FloatFeature(store, options.action_feature, "action feature"));
  ROBOLOOP_ASSIGN_OR_RETURN(rows.images, ConcatImageFeatures(store, options.image_features));
  return rows;
}

absl::StatusOr<std::unique_ptr<StoreWindows>> StoreWindows::Create(
    const data::EpisodeStore& store, const LoaderOptions& options) {
  ROBOLOOP_ASSIGN_OR_RETURN(TrainingRows rows, TrainingRowsOf(store, options));
  return std::unique_ptr<StoreWindows>(new StoreWindows(store, std::move(rows)));
}

StoreWindows::StoreWindows(const data::EpisodeStore& store, TrainingRows rows)
    : store_(store), rows_(std::move(rows)) {
  for (int64_t e = 0; e < store.num_episodes(); ++e) {
    episode_offsets_.push_back(store.episode_offset(e));
  }
}

SampleWindow StoreWindows::At(int64_t window) const {
  // The last episode starting at or before `window` (empty episodes share the next one's start).
  const auto next = std::upper_bound(episode_offsets_.begin(), episode_offsets_.end(), window);
  const int64_t episode = (next - episode_offsets_.begin()) - 1;
  const int64_t start = store_.episode_offset(episode);
  return SampleWindow{&rows_, start, store_.episode_length(episode), window - start, episode};
}

absl::StatusOr<std::unique_ptr<BatchBuilder>> BatchBuilder::Create(
    const TrainingRows& rows, const Normalization& norm, const LoaderOptions& options) {
  if (options.history < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("loader history must be >= 1, got ", options.history));
  }
  if (options.chunk < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("loader chunk must be >= 1, got ", options.chunk));
  }
  if (options.normalize) {
    ROBOLOOP_RETURN_IF_ERROR(CheckWidth(norm.obs_mean, "obs mean", rows.obs.width));
    ROBOLOOP_RETURN_IF_ERROR(CheckWidth(norm.obs_std, "obs std", rows.obs.width));
    ROBOLOOP_RETURN_IF_ERROR(CheckWidth(norm.action_mean, "action mean", rows.actions.width));
    ROBOLOOP_RETURN_IF_ERROR(CheckWidth(norm.action_std, "action std", rows.actions.width));
  }
  return std::unique_ptr<BatchBuilder>(new BatchBuilder(rows, norm, options));
}

BatchBuilder::BatchBuilder(const TrainingRows& rows, const Normalization& norm,
                           const LoaderOptions& options)
    : obs_width_(rows.obs.width),
      action_width_(rows.actions.width),
      image_bytes_(rows.images.bytes),
      norm_(norm),
      history_(options.history),
      chunk_(options.chunk),
      normalize_(options.normalize) {}

Batch BatchBuilder::Build(int64_t index, absl::Span<const SampleWindow> samples) const {
  Batch batch;
  batch.index = index;
  batch.batch_size = static_cast<int>(samples.size());
  batch.history = history_;
  batch.chunk = chunk_;
  batch.obs_dim = obs_dim();
  batch.action_dim = action_dim();
  batch.image_bytes = image_bytes();
  const size_t count = samples.size();
  batch.obs.resize(count * history_ * obs_width_);
  batch.history_length.resize(count);
  batch.actions.resize(count * chunk_ * action_width_);
  batch.action_valid.resize(count * chunk_);
  batch.images.resize(count * image_bytes_);
  for (size_t i = 0; i < count; ++i) {
    FillSample(samples[i], static_cast<int>(i), &batch);
    batch.sample_episode.push_back(samples[i].episode);
    batch.sample_step.push_back(samples[i].t);
  }
  if (normalize_) {
    NormalizeRows(norm_.obs_mean, norm_.obs_std, static_cast<int64_t>(count) * history_,
                  batch.obs.data());
    NormalizeRows(norm_.action_mean, norm_.action_std, static_cast<int64_t>(count) * chunk_,
                  batch.actions.data());
  }
  return batch;
}

void BatchBuilder::FillSample(const SampleWindow& window, int sample, Batch* batch) const {
  const int64_t start = window.start;
  const int64_t length = window.length;
  const int64_t t = window.t;
  batch->history_length[sample] = static_cast<int32_t>(std::min<int64_t>(history_, t + 1));
  for (int h = 0; h < history_; ++h) {
    // Slot h holds step t - (history - 1) + h; steps before the episode repeat step 0.
    const int64_t step = std::max<int64_t>(0, t - (history_ - 1) + h);
    const int64_t slot = static_cast<int64_t>(sample) * history_ + h;
    window.rows->obs.CopyRow(start + step, batch->obs.data() + slot * obs_width_);
  }
  for (int c = 0; c < chunk_; ++c) {
    // Slot c holds action t + c; steps past the episode repeat its last action.
    const int64_t step = std::min<int64_t>(length - 1, t + c);
    const int64_t slot = static_cast<int64_t>(sample) * chunk_ + c;
    const absl::Span<const float> row = window.rows->actions.Row(start + step);
    std::copy(row.begin(), row.end(), batch->actions.begin() + slot * action_width_);
    batch->action_valid[slot] = t + c < length ? 1 : 0;
  }
  window.rows->images.CopyRow(start + t, batch->images.data() + sample * image_bytes_);
}

}  // namespace roboloop::train
