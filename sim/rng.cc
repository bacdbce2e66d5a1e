#include "sim/rng.h"

#include <cmath>

namespace roboloop::sim {
namespace {
// 53 random bits mapped to [0, 1).
double ToUnit(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }
}  // namespace

uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t EpisodeSeed(uint64_t base_seed, int64_t episode_index) {
  return Mix64(Mix64(base_seed) ^ static_cast<uint64_t>(episode_index));
}

double Rng::Uniform(double low, double high) { return low + (high - low) * ToUnit(engine_()); }

double Rng::Normal() {
  // 1 - u keeps the logarithm's argument in (0, 1].
  const double u1 = 1.0 - ToUnit(engine_());
  const double u2 = ToUnit(engine_());
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

double CounterUniform(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
  return ToUnit(Mix64(Mix64(Mix64(seed ^ Mix64(a)) ^ b) ^ c));
}

}  // namespace roboloop::sim
