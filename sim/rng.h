// Deterministic random numbers for episodes (docs/architecture.md §5): episode i draws from a
// stream seeded by (base seed, i) only, with distributions written here so that results do
// not depend on the standard library's distribution implementations.
#pragma once

#include <cstdint>
#include <random>

namespace roboloop::sim {

// Mixes 64 bits (SplitMix64 finaliser); a bijection with good avalanche.
uint64_t Mix64(uint64_t x);

// The seed of episode `episode_index` of a rollout with `base_seed`.
uint64_t EpisodeSeed(uint64_t base_seed, int64_t episode_index);

// A reproducible random stream. Not thread-safe; one per env.
class Rng {
 public:
  // Starts the stream at `seed`.
  explicit Rng(uint64_t seed) : engine_(seed) {}

  // Restarts the stream at `seed`.
  void Seed(uint64_t seed) { engine_.seed(seed); }
  // Uniform in [low, high).
  double Uniform(double low, double high);
  // Standard normal (Box–Muller, one value per call).
  double Normal();
  // Raw 64 bits.
  uint64_t Next() { return engine_(); }

 private:
  std::mt19937_64 engine_;
};

// A stateless uniform [0, 1) value from a counter triple: for policies whose draws must not
// depend on batching (a random policy keyed by episode, step and dimension).
double CounterUniform(uint64_t seed, uint64_t a, uint64_t b, uint64_t c);

}  // namespace roboloop::sim
