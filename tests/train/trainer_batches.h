// Helpers of the tests that drive the trainer handle (train/torch_runtime.h): the torch
// library, small policies and synthetic batches of fixed dims.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/torch_runtime.h"

namespace roboloop::train::trainer_testing {

inline constexpr int kObs = 5, kAct = 2, kHistory = 4, kChunk = 3;

// A batch with mixed history lengths and padded action steps; the first `full_histories`
// samples have every history slot real.
struct OwnedBatch {
  int batch = 0;
  std::vector<float> obs, actions;
  std::vector<int32_t> history_length;
  std::vector<uint8_t> valid;

  explicit OwnedBatch(int n, uint32_t seed, int full_histories = 0) : batch(n) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal;
    for (int i = 0; i < n * kHistory * kObs; ++i) obs.push_back(normal(rng));
    for (int i = 0; i < n * kChunk * kAct; ++i) actions.push_back(normal(rng));
    for (int b = 0; b < n; ++b) {
      history_length.push_back(b < full_histories ? kHistory : 1 + b % kHistory);
      for (int c = 0; c < kChunk; ++c) valid.push_back(c <= (b % kChunk) ? 1 : 0);
    }
  }

  RoboloopTrainBatch View() const {
    return RoboloopTrainBatch{batch, kHistory, kChunk, kObs, kAct, obs.data(),
                              history_length.data(), actions.data(), valid.data(), 0, nullptr};
  }
};

// A small policy of `kind` (mlp or transformer, with the flow-matching head when `flow`) for
// the batches above.
inline nlohmann::json Policy(const std::string& kind, bool flow = false) {
  nlohmann::json policy = {{"kind", kind}, {"obs_dim", kObs}, {"action_dim", kAct},
                           {"history", kHistory}, {"chunk", kChunk}};
  if (kind == "mlp") {
    policy["hidden"] = {16, 16};
  } else {
    policy.update({{"d_model", 16}, {"layers", 2}, {"heads", 2}, {"ffn", 32}, {"flow_matching", flow}});
  }
  return policy;
}

}  // namespace roboloop::train::trainer_testing
