#include "train/sampling.h"

#include <utility>

#include "common/status.h"

namespace roboloop::train {

uint64_t Mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t EpochSeed(uint64_t seed, int64_t epoch) {
  return Mix64(seed + 0x9E3779B97F4A7C15ull * (static_cast<uint64_t>(epoch) + 1));
}

uint64_t BoundedDraw(std::mt19937_64& rng, uint64_t bound) {
  ROBOLOOP_CHECK(bound >= 1);
  // 2^64 mod bound, computed in 64-bit arithmetic as (2^64 - bound) mod bound.
  const uint64_t threshold = (0 - bound) % bound;
  uint64_t draw = rng();
  while (draw < threshold) draw = rng();
  return draw % bound;
}

std::vector<int64_t> SeededPermutation(int64_t n, uint64_t engine_seed) {
  std::vector<int64_t> permutation(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) permutation[i] = i;
  std::mt19937_64 rng(engine_seed);
  for (int64_t i = n - 1; i >= 1; --i) {
    const uint64_t j = BoundedDraw(rng, static_cast<uint64_t>(i) + 1);
    std::swap(permutation[i], permutation[j]);
  }
  return permutation;
}

std::vector<int64_t> EpochPermutation(int64_t windows, uint64_t seed, int64_t epoch) {
  return SeededPermutation(windows, EpochSeed(seed, epoch));
}

BatchSlice SliceOfBatch(int64_t batch_index, int64_t batches_per_epoch, int batch_size,
                        int rank, int world_size) {
  ROBOLOOP_CHECK(batch_index >= 0 && batches_per_epoch >= 1);
  ROBOLOOP_CHECK(rank >= 0 && rank < world_size);
  const int64_t global = static_cast<int64_t>(batch_size) * world_size;
  BatchSlice slice;
  slice.epoch = batch_index / batches_per_epoch;
  slice.begin =
      (batch_index % batches_per_epoch) * global + static_cast<int64_t>(rank) * batch_size;
  slice.size = batch_size;
  return slice;
}

}  // namespace roboloop::train
