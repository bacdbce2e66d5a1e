// The streaming loader's sampling contract as pure functions (train/README.md, "Streaming"):
// each epoch shuffles the episodes, deals them to the ranks, cuts each rank's share into
// blocks of at most block_windows windows and shuffles the windows inside each block. A rank
// reads only its own episodes, one block after the other. Torch-free, thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace roboloop::train {

// What fixes a streaming sequence besides the episode lengths.
struct StreamSampling {
  uint64_t seed = 0;          // sampling seed
  int rank = 0;               // this rank
  int world_size = 1;         // ranks
  int batch_size = 1;         // samples per rank per batch
  int64_t block_windows = 1;  // windows per block at most (a longer episode is a block alone)
};

// One rank's stream of one epoch.
struct StreamEpoch {
  std::vector<int64_t> episodes;            // this rank's episodes, in stream order
  std::vector<int64_t> block_episode_begin;  // index in `episodes` of each block's first, then episodes.size()
  std::vector<int64_t> block_window_begin;   // stream position of each block's first window, then the total
  int64_t batches = 0;                       // batches of the epoch: min over ranks of windows / batch_size
};

// One window: step `t` of episode `episode`.
struct EpisodeStep {
  int64_t episode = 0;
  int64_t t = 0;
};

// The engine seed of epoch `epoch`'s episode order: Mix64(EpochSeed(seed, epoch) ^ 0xE7150DE5).
uint64_t EpisodeOrderSeed(uint64_t seed, int64_t epoch);

// The engine seed of block `block` of rank `rank` in epoch `epoch`:
// Mix64(EpochSeed(seed, epoch) + 0x9E3779B97F4A7C15 * ((rank << 40) + block + 1)).
uint64_t BlockSeed(uint64_t seed, int64_t epoch, int rank, int64_t block);

// Rank s.rank's stream of epoch `epoch` over episodes of `lengths` (all >= 1): the episodes
// in SeededPermutation(episodes, EpisodeOrderSeed) order, each given to the rank holding the
// fewest windows so far (the lowest such rank); the rank's episodes cut, in order, into blocks
// closed before an episode that would take them past s.block_windows.
StreamEpoch PlanStreamEpoch(absl::Span<const int64_t> lengths, const StreamSampling& s, int64_t epoch);

// The windows of block `block` of `plan` in sampled order: the block's windows in episode
// order, then t order, permuted by SeededPermutation(windows, BlockSeed(..., block)).
std::vector<EpisodeStep> BlockWindows(const StreamEpoch& plan, absl::Span<const int64_t> lengths,
                                      const StreamSampling& s, int64_t epoch, int64_t block);

}  // namespace roboloop::train
