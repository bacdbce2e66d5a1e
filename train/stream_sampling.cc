#include "train/stream_sampling.h"

#include <algorithm>

#include "common/status.h"
#include "train/sampling.h"

namespace roboloop::train {

uint64_t EpisodeOrderSeed(uint64_t seed, int64_t epoch) {
  return Mix64(EpochSeed(seed, epoch) ^ 0xE7150DE5ull);
}

uint64_t BlockSeed(uint64_t seed, int64_t epoch, int rank, int64_t block) {
  const uint64_t key = (static_cast<uint64_t>(rank) << 40) + static_cast<uint64_t>(block) + 1;
  return Mix64(EpochSeed(seed, epoch) + 0x9E3779B97F4A7C15ull * key);
}

StreamEpoch PlanStreamEpoch(absl::Span<const int64_t> lengths, const StreamSampling& s, int64_t epoch) {
  ROBOLOOP_CHECK(s.rank >= 0 && s.rank < s.world_size && s.batch_size >= 1 && s.block_windows >= 1);
  const std::vector<int64_t> order =
      SeededPermutation(static_cast<int64_t>(lengths.size()), EpisodeOrderSeed(s.seed, epoch));
  std::vector<int64_t> windows(static_cast<size_t>(s.world_size), 0);
  StreamEpoch plan;
  for (int64_t episode : order) {
    const auto fewest = std::min_element(windows.begin(), windows.end());
    *fewest += lengths[episode];
    if (fewest - windows.begin() == s.rank) plan.episodes.push_back(episode);
  }
  plan.batches = *std::min_element(windows.begin(), windows.end()) / s.batch_size;
  int64_t in_block = 0;
  int64_t position = 0;
  for (size_t i = 0; i < plan.episodes.size(); ++i) {
    const int64_t length = lengths[plan.episodes[i]];
    if (i == 0 || in_block + length > s.block_windows) {
      plan.block_episode_begin.push_back(static_cast<int64_t>(i));
      plan.block_window_begin.push_back(position);
      in_block = 0;
    }
    in_block += length;
    position += length;
  }
  plan.block_episode_begin.push_back(static_cast<int64_t>(plan.episodes.size()));
  plan.block_window_begin.push_back(position);
  return plan;
}

std::vector<EpisodeStep> BlockWindows(const StreamEpoch& plan, absl::Span<const int64_t> lengths,
                                      const StreamSampling& s, int64_t epoch, int64_t block) {
  std::vector<EpisodeStep> in_order;
  for (int64_t i = plan.block_episode_begin[block]; i < plan.block_episode_begin[block + 1]; ++i) {
    const int64_t episode = plan.episodes[i];
    for (int64_t t = 0; t < lengths[episode]; ++t) in_order.push_back({episode, t});
  }
  const std::vector<int64_t> permutation = SeededPermutation(
      static_cast<int64_t>(in_order.size()), BlockSeed(s.seed, epoch, s.rank, block));
  std::vector<EpisodeStep> sampled;
  sampled.reserve(in_order.size());
  for (int64_t position : permutation) sampled.push_back(in_order[position]);
  return sampled;
}

}  // namespace roboloop::train
