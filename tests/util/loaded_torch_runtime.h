// Test helpers of the tests that drive the torch library through its C ABI
// (train/torch_runtime.h).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "train/torch_runtime.h"

namespace roboloop::testing {

// The loaded torch library; aborts the test binary with the load error where it cannot load
// (every case after it would fail for the same reason).
inline const train::TorchRuntime& LoadedTorchRuntime() {
  absl::StatusOr<const train::TorchRuntime*> runtime = train::TorchRuntime::Load();
  ROBOLOOP_CHECK_MSG(runtime.ok(), runtime.status().ToString());
  return **runtime;
}

// The CUDA devices the loaded LibTorch sees (0 on a machine without a GPU).
inline int CudaDevicesLibTorchSees() {
  return nlohmann::json::parse(LoadedTorchRuntime().DescribeRuntime()).value("cuda_devices", 0);
}

// rows x cols standard-normal floats, row-major, drawn from a generator seeded with `seed`.
inline std::vector<float> RandomRows(int rows, int cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> values(static_cast<size_t>(rows) * static_cast<size_t>(cols));
  for (float& v : values) v = normal(rng);
  return values;
}

}  // namespace roboloop::testing
