// Reading and writing float32 tensors in the safetensors layout (the `policy` blob of a
// checkpoint, docs/architecture.md §2): an 8-byte little-endian header length, a JSON header
// {name: {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, "__metadata__": {...}},
// then the raw little-endian data. Torch-free: tests and sim tools may link it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace roboloop::train {

// One dense float32 tensor, row-major.
struct FloatTensor {
  std::vector<int64_t> shape;  // dimensions; values holds their product of floats
  std::vector<float> values;   // row-major data
};

// Named tensors of one file, ordered by name.
using TensorMap = std::map<std::string, FloatTensor>;

// Writes `tensors` to `path` atomically. InvalidArgument when a tensor's values do not
// match its shape.
absl::Status WriteSafetensors(const std::string& path, const TensorMap& tensors);

// Reads every tensor of `path`. Errors name the file and what is wrong: a missing file,
// a header that is truncated or not JSON, a dtype other than F32, offsets outside the data
// or disagreeing with the shape.
absl::StatusOr<TensorMap> ReadSafetensors(const std::string& path);

}  // namespace roboloop::train
