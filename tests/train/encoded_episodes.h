// Episodes whose values encode (episode, step), shared by the loader tests.
#pragma once

#include <vector>

#include "data/array.h"

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

}  // namespace roboloop::train::testing
