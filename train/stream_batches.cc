#include "train/stream_batches.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "train/store_batches.h"

namespace roboloop::train {

int64_t StreamBatches::DefaultBlockWindows(const data::EpisodeCache& cache) {
  return std::max<int64_t>(1, cache.capacity_bytes() / (4 * std::max<int64_t>(1, cache.step_bytes())));
}

absl::StatusOr<std::unique_ptr<StreamBatches>> StreamBatches::Create(
    std::shared_ptr<data::EpisodeCache> cache, const Normalization& norm,
    const LoaderOptions& options, int64_t block_windows) {
  if (cache == nullptr) return absl::InvalidArgumentError("loader: no episode cache given");
  ROBOLOOP_RETURN_IF_ERROR(CheckShardOptions(options, cache->total_steps()));
  StreamSampling sampling;
  sampling.seed = options.seed;
  sampling.rank = options.rank;
  sampling.world_size = options.world_size;
  sampling.batch_size = options.batch_size;
  sampling.block_windows = block_windows > 0 ? block_windows : DefaultBlockWindows(*cache);
  std::vector<int64_t> lengths;
  for (int64_t e = 0; e < cache->num_episodes(); ++e) lengths.push_back(cache->episode_length(e));
  const StreamEpoch first = PlanStreamEpoch(lengths, sampling, 0);
  if (first.batches == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        cache->path(), ": streaming epoch 0 leaves a rank fewer windows than batch_size ",
        options.batch_size, " (", options.world_size, " ranks share ", cache->total_steps(),
        " windows in whole episodes)"));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(std::shared_ptr<const data::EpisodeStore> episode,
                            cache->Get(first.episodes.front()));
  ROBOLOOP_ASSIGN_OR_RETURN(TrainingRows rows, TrainingRowsOf(*episode, options));
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<BatchBuilder> builder,
                            BatchBuilder::Create(rows, norm, options));
  return std::unique_ptr<StreamBatches>(new StreamBatches(
      std::move(cache), std::move(lengths), std::move(builder), options, sampling, first.batches));
}

StreamBatches::StreamBatches(std::shared_ptr<data::EpisodeCache> cache,
                             std::vector<int64_t> lengths, std::unique_ptr<BatchBuilder> builder,
                             const LoaderOptions& options, const StreamSampling& sampling,
                             int64_t first_epoch_batches)
    : cache_(std::move(cache)),
      lengths_(std::move(lengths)),
      builder_(std::move(builder)),
      options_(options),
      sampling_(sampling),
      first_epoch_batches_(first_epoch_batches) {}

absl::StatusOr<StreamBatches::Place> StreamBatches::Locate(int64_t index) {
  while (epoch_starts_.back() <= index) {
    const int64_t epoch = static_cast<int64_t>(epoch_starts_.size()) - 1;
    const int64_t batches = Plan(epoch)->batches;
    if (batches == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          cache_->path(), ": streaming epoch ", epoch,
          " leaves a rank fewer windows than batch_size ", options_.batch_size));
    }
    epoch_starts_.push_back(epoch_starts_.back() + batches);
  }
  const auto next = std::upper_bound(epoch_starts_.begin(), epoch_starts_.end(), index);
  const int64_t epoch = (next - epoch_starts_.begin()) - 1;
  return Place{epoch, index - epoch_starts_[epoch]};
}

std::shared_ptr<const StreamEpoch> StreamBatches::Plan(int64_t epoch) {
  auto& plan = plans_[epoch];
  if (plan == nullptr) {
    plan = std::make_shared<const StreamEpoch>(PlanStreamEpoch(lengths_, sampling_, epoch));
  }
  return plan;
}

std::shared_ptr<const std::vector<EpisodeStep>> StreamBatches::Block(int64_t epoch, int64_t block) {
  auto& windows = blocks_[{epoch, block}];
  if (windows == nullptr) {
    windows = std::make_shared<const std::vector<EpisodeStep>>(
        BlockWindows(*Plan(epoch), lengths_, sampling_, epoch, block));
  }
  return windows;
}

absl::StatusOr<std::vector<EpisodeStep>> StreamBatches::Windows(int64_t index, int64_t cursor) {
  absl::MutexLock lock(&mu_);
  ROBOLOOP_ASSIGN_OR_RETURN(const Place place, Locate(index));
  ROBOLOOP_ASSIGN_OR_RETURN(const Place oldest, Locate(std::min(cursor, index)));
  // Batches from the cursor on need nothing of earlier epochs or of blocks before the cursor's.
  const StreamEpoch& oldest_plan = *Plan(oldest.epoch);
  const int64_t oldest_position = oldest.batch * options_.batch_size;
  const int64_t oldest_block =
      (std::upper_bound(oldest_plan.block_window_begin.begin(), oldest_plan.block_window_begin.end(),
                        oldest_position) -
       oldest_plan.block_window_begin.begin()) - 1;
  plans_.erase(plans_.begin(), plans_.lower_bound(oldest.epoch));
  blocks_.erase(blocks_.begin(), blocks_.lower_bound({oldest.epoch, oldest_block}));

  const std::shared_ptr<const StreamEpoch> plan = Plan(place.epoch);
  const std::vector<int64_t>& begins = plan->block_window_begin;
  std::vector<EpisodeStep> windows;
  for (int64_t i = 0; i < options_.batch_size; ++i) {
    const int64_t position = place.batch * options_.batch_size + i;
    const int64_t block =
        (std::upper_bound(begins.begin(), begins.end(), position) - begins.begin()) - 1;
    windows.push_back((*Block(place.epoch, block))[position - begins[block]]);
  }
  return windows;
}

absl::StatusOr<Batch> StreamBatches::Build(int64_t index, int64_t cursor) {
  ROBOLOOP_ASSIGN_OR_RETURN(const std::vector<EpisodeStep> windows, Windows(index, cursor));
  // Each distinct episode of the batch, held until the batch is built.
  struct Held {
    std::shared_ptr<const data::EpisodeStore> store;
    TrainingRows rows;
  };
  std::map<int64_t, Held> held;
  std::vector<SampleWindow> samples;
  for (const EpisodeStep& window : windows) {
    auto found = held.find(window.episode);
    if (found == held.end()) {
      Held episode;
      ROBOLOOP_ASSIGN_OR_RETURN(episode.store, cache_->Get(window.episode));
      ROBOLOOP_ASSIGN_OR_RETURN(episode.rows, TrainingRowsOf(*episode.store, options_));
      found = held.emplace(window.episode, std::move(episode)).first;
    }
    samples.push_back(SampleWindow{&found->second.rows, 0, lengths_[window.episode], window.t, window.episode});
  }
  return builder_->Build(index, samples);
}

}  // namespace roboloop::train
