// The loader's sampling contract as pure functions: the epoch permutation of all windows and
// which permutation positions global batch k gives to each rank. Torch-free, thread-safe.
//
// Epoch e shuffles the window indices 0..n-1 with a Fisher–Yates shuffle driven by
// std::mt19937_64 seeded with EpochSeed(seed, e); for i = n-1 down to 1 it swaps positions i
// and BoundedDraw(rng, i + 1). Both the engine and the bounded draw are specified exactly, so
// the permutation is the same with every standard library (std::shuffle and
// std::uniform_int_distribution are implementation-defined and are not used).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace roboloop::train {

// SplitMix64's finalizer: a bijective 64-bit mix.
uint64_t Mix64(uint64_t x);

// The engine seed of epoch `epoch`: Mix64(seed + 0x9E3779B97F4A7C15 * (epoch + 1)).
uint64_t EpochSeed(uint64_t seed, int64_t epoch);

// A uniform draw from [0, bound) (bound >= 1): rejects raw draws below 2^64 mod bound,
// then returns draw mod bound.
uint64_t BoundedDraw(std::mt19937_64& rng, uint64_t bound);

// The Fisher–Yates permutation of 0..n-1 driven by std::mt19937_64(engine_seed) (see the
// file comment).
std::vector<int64_t> SeededPermutation(int64_t n, uint64_t engine_seed);

// The permutation of 0..windows-1 used by epoch `epoch`:
// SeededPermutation(windows, EpochSeed(seed, epoch)).
std::vector<int64_t> EpochPermutation(int64_t windows, uint64_t seed, int64_t epoch);

// Where one rank's share of one global batch lies in its epoch's permutation.
struct BatchSlice {
  int64_t epoch = 0;  // batch_index / batches_per_epoch
  int64_t begin = 0;  // first permutation position
  int64_t size = 0;   // positions [begin, begin + size)
};

// Global batch `batch_index` (>= 0) takes positions [j*G, (j+1)*G) of its epoch's
// permutation, G = batch_size * world_size, j = batch_index mod batches_per_epoch; rank
// `rank` takes [j*G + rank*batch_size, j*G + (rank+1)*batch_size).
BatchSlice SliceOfBatch(int64_t batch_index, int64_t batches_per_epoch, int batch_size,
                        int rank, int world_size);

}  // namespace roboloop::train
