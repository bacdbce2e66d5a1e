// An owning n-dimensional array of one dtype, and an episode: named arrays with a common
// leading (time) dimension.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "common/status.h"
#include "data/dtype.h"

namespace roboloop::data {

// A dense row-major array. `shape[0]` is the number of steps for episode data. Plain value
// type; not synchronised.
struct Array {
  DType dtype = DType::kFloat32;  // element type
  std::vector<int64_t> shape;     // dimensions, outermost first
  std::vector<uint8_t> bytes;     // num_elements() * DTypeSize(dtype) bytes, row-major

  // Builds an array of `shape` holding `values` (their count must match the shape).
  template <typename T>
  static Array From(std::vector<int64_t> shape, const std::vector<T>& values) {
    Array array;
    array.dtype = DTypeOf<T>();
    array.shape = std::move(shape);
    ROBOLOOP_CHECK_MSG(array.NumElements() == static_cast<int64_t>(values.size()),
                       "Array::From: ", values.size(), " values for ", array.NumElements(),
                       " elements");
    array.bytes.resize(values.size() * sizeof(T));
    if (!values.empty()) std::memcpy(array.bytes.data(), values.data(), array.bytes.size());
    return array;
  }

  // Returns an array of `shape` and `dtype` with zeroed contents.
  static Array Zeros(DType dtype, std::vector<int64_t> shape);

  // Product of the dimensions (1 for rank 0).
  int64_t NumElements() const;

  // shape[0], or 1 for a rank-0 array.
  int64_t Steps() const;

  // The shape of one step: shape without its first dimension.
  std::vector<int64_t> StepShape() const;

  // Number of elements in one step.
  int64_t ElementsPerStep() const;

  // Typed read-only view; the dtype must be DTypeOf<T>() (checked).
  template <typename T>
  absl::Span<const T> Values() const {
    ROBOLOOP_CHECK_MSG(dtype == DTypeOf<T>(), "Array::Values: array is ", DTypeName(dtype));
    return absl::Span<const T>(reinterpret_cast<const T*>(bytes.data()), NumElements());
  }

  // Typed mutable view; the dtype must be DTypeOf<T>() (checked).
  template <typename T>
  absl::Span<T> MutableValues() {
    ROBOLOOP_CHECK_MSG(dtype == DTypeOf<T>(), "Array::MutableValues: array is ",
                       DTypeName(dtype));
    return absl::Span<T>(reinterpret_cast<T*>(bytes.data()), NumElements());
  }

  // Element `index` (flat, row-major) converted to double.
  double ValueAsDouble(int64_t index) const;
};

// One episode (or a block of consecutive steps of one): feature name -> array, where a
// feature name is a path inside a demo group, e.g. "actions", "obs/qpos", "rewards".
using Episode = std::map<std::string, Array>;

// Formats a shape as "[200, 32]".
std::string ShapeToString(const std::vector<int64_t>& shape);

// Copies `values` (count elements of `dtype`) into doubles.
void ConvertToDouble(DType dtype, const uint8_t* values, int64_t count, double* out);

}  // namespace roboloop::data
