// Episodes whose values encode (episode, step) and batch taking, shared by the loader tests.
#pragma once

#include <vector>

#include "data/array.h"
#include "gtest/gtest.h"
#include "train/loader.h"

namespace roboloop::train::testing {

// Features whose values encode (episode e, step t): obs/a = [1000e + t, 0.5t], obs/e = [e]
// (scalar), actions = [1000e + t, -t], obs/wide = float64 [T, 1].
inline data::Episode EncodedEpisode(int episode, int steps) {
  std::vector<float> a, e, actions;
  std::vector<double> wide;
  for (int t = 0; t < steps; ++t) {
    a.insert(a.end(), {1000.0f * episode + t, 0.5f * t});
    e.push_back(static_cast<float>(episode));
    actions.insert(actions.end(), {1000.0f * episode + t, -1.0f * t});
    wide.push_back(t);
  }
  data::Episode out;
  out["obs/a"] = data::Array::From<float>({steps, 2}, a);
  out["obs/e"] = data::Array::From<float>({steps}, e);
  out["obs/wide"] = data::Array::From<double>({steps, 1}, wide);
  out["actions"] = data::Array::From<float>({steps, 2}, actions);
  return out;
}

// The next `count` batches of `loader`; a failed Next is a test failure and is left out.
inline std::vector<Batch> TakeBatches(Loader& loader, int count) {
  std::vector<Batch> batches;
  for (int i = 0; i < count; ++i) {
    auto batch = loader.Next();
    EXPECT_TRUE(batch.ok()) << batch.status();
    if (batch.ok()) batches.push_back(std::move(batch).value());
  }
  return batches;
}

}  // namespace roboloop::train::testing
