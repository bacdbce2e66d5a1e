// Helpers of the policy tests: MLP weight files written here and TorchScript files exported
// at test time by the project environment's torch (tests/train/export_policies.py).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/util/subprocess.h"
#include "train/safetensors.h"

namespace roboloop::train::testing {

// The project environment's Python, with the pinned torch of python/pins.txt.
inline constexpr char kTorchPython[] = ROBOLOOP_PYTHON;

// Seeded uniform weights of an MLP with widths obs_dim, hidden..., action_dim, in the
// layers.<i>.{weight,bias} layout of kind "mlp".
inline TensorMap RandomMlpTensors(const std::vector<int64_t>& widths, uint32_t seed) {
  std::mt19937 rng(seed);
  TensorMap tensors;
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    const float scale = 1.0f / std::sqrt(static_cast<float>(widths[i]));
    FloatTensor weight{{widths[i + 1], widths[i]}, {}}, bias{{widths[i + 1]}, {}};
    for (int64_t k = 0; k < widths[i + 1] * widths[i]; ++k)
      weight.values.push_back(scale * uniform(rng));
    for (int64_t k = 0; k < widths[i + 1]; ++k) bias.values.push_back(0.1f * uniform(rng));
    tensors["layers." + std::to_string(i) + ".weight"] = weight;
    tensors["layers." + std::to_string(i) + ".bias"] = bias;
  }
  return tensors;
}

// The "mlp" options JSON for `widths` and `activation`.
inline std::string MlpOptionsJson(const std::vector<int64_t>& widths,
                                  const std::string& activation) {
  std::ostringstream json;
  json << "{\"obs_dim\": " << widths.front() << ", \"action_dim\": " << widths.back()
       << ", \"hidden\": [";
  for (size_t i = 1; i + 1 < widths.size(); ++i) json << (i > 1 ? ", " : "") << widths[i];
  json << "], \"activation\": \"" << activation << "\"}";
  return json.str();
}

// Writes a seeded MLP to `path`; fails the test on error.
inline void WriteMlp(const std::string& path, const std::vector<int64_t>& widths, uint32_t seed) {
  ASSERT_TRUE(WriteSafetensors(path, RandomMlpTensors(widths, seed)).ok());
}

// Runs export_policies.py into `dir`; fails the test when the script fails.
inline void ExportPythonPolicies(const std::string& dir) {
  roboloop::testing::ProgramResult r = roboloop::testing::RunProgram(
      {kTorchPython, ROBOLOOP_SOURCE_DIR "/tests/train/export_policies.py", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

// expected.txt of export_policies.py.
struct PythonOutputs {
  int batch = 0, obs_dim = 0, action_dim = 0;
  std::vector<float> obs, scripted, traced;  // row-major
};

// Parses `path` (written by export_policies.py); fails the test when it is short.
inline PythonOutputs ReadPythonOutputs(const std::string& path) {
  PythonOutputs out;
  std::ifstream in(path);
  in >> out.batch >> out.obs_dim >> out.action_dim;
  auto read = [&in](std::vector<float>& values, int n) {
    values.resize(static_cast<size_t>(n));
    for (float& v : values) in >> v;
  };
  read(out.obs, out.batch * out.obs_dim);
  read(out.scripted, out.batch * out.action_dim);
  read(out.traced, out.batch * out.action_dim);
  EXPECT_TRUE(in && out.batch > 0) << path << " is incomplete";
  return out;
}

// max |a - b| / max |b| over all entries.
inline double MaxRelativeError(const std::vector<float>& a, const std::vector<float>& b) {
  double max_diff = 0.0, max_ref = 0.0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(static_cast<double>(a[i]) - b[i]));
    max_ref = std::max(max_ref, std::abs(static_cast<double>(b[i])));
  }
  return a.size() == b.size() && max_ref > 0.0 ? max_diff / max_ref : 1.0;
}

}  // namespace roboloop::train::testing
