// Element types of dataset arrays, as stored in HDF5 files (float32/float64 and integers).
#pragma once

#include <cstdint>

namespace roboloop::data {

// The element type of an array; names follow numpy ("float32", "uint8", ...).
enum class DType {
  kFloat32,
  kFloat64,
  kInt8,
  kUint8,
  kInt16,
  kUint16,
  kInt32,
  kUint32,
  kInt64,
  kUint64,
};

// Returns the numpy-style name of `dtype`, e.g. "float32".
const char* DTypeName(DType dtype);

// Returns the size of one element of `dtype` in bytes.
int64_t DTypeSize(DType dtype);

// True for float32 and float64.
bool IsFloating(DType dtype);

// Writes `count` elements of `dtype` at `values` to `out` as float32 (rounded to nearest;
// 64-bit integers beyond 2^24 lose precision).
void ConvertToFloat32(DType dtype, const void* values, int64_t count, float* out);

// Maps a C++ element type to its DType (specialised for the supported types only).
template <typename T>
constexpr DType DTypeOf();
template <> constexpr DType DTypeOf<float>() { return DType::kFloat32; }
template <> constexpr DType DTypeOf<double>() { return DType::kFloat64; }
template <> constexpr DType DTypeOf<int8_t>() { return DType::kInt8; }
template <> constexpr DType DTypeOf<uint8_t>() { return DType::kUint8; }
template <> constexpr DType DTypeOf<int16_t>() { return DType::kInt16; }
template <> constexpr DType DTypeOf<uint16_t>() { return DType::kUint16; }
template <> constexpr DType DTypeOf<int32_t>() { return DType::kInt32; }
template <> constexpr DType DTypeOf<uint32_t>() { return DType::kUint32; }
template <> constexpr DType DTypeOf<int64_t>() { return DType::kInt64; }
template <> constexpr DType DTypeOf<uint64_t>() { return DType::kUint64; }

}  // namespace roboloop::data
