#include "data/dtype.h"

#include <array>
#include <cstddef>
#include <cstring>

namespace roboloop::data {
namespace {

struct DTypeEntry {
  DType dtype;
  const char* name;
  int64_t size;
};

constexpr std::array<DTypeEntry, 10> kDTypes = {{
    {DType::kFloat32, "float32", 4},
    {DType::kFloat64, "float64", 8},
    {DType::kInt8, "int8", 1},
    {DType::kUint8, "uint8", 1},
    {DType::kInt16, "int16", 2},
    {DType::kUint16, "uint16", 2},
    {DType::kInt32, "int32", 4},
    {DType::kUint32, "uint32", 4},
    {DType::kInt64, "int64", 8},
    {DType::kUint64, "uint64", 8},
}};

const DTypeEntry& EntryOf(DType dtype) { return kDTypes[static_cast<size_t>(dtype)]; }

template <typename T>
void CastEach(const void* values, int64_t count, float* out) {
  for (int64_t i = 0; i < count; ++i) {
    T value;
    std::memcpy(&value, static_cast<const char*>(values) + i * sizeof(T), sizeof(T));
    out[i] = static_cast<float>(value);
  }
}

}  // namespace

const char* DTypeName(DType dtype) { return EntryOf(dtype).name; }

int64_t DTypeSize(DType dtype) { return EntryOf(dtype).size; }

bool IsFloating(DType dtype) { return dtype == DType::kFloat32 || dtype == DType::kFloat64; }

void ConvertToFloat32(DType dtype, const void* values, int64_t count, float* out) {
  switch (dtype) {
    case DType::kFloat32: return CastEach<float>(values, count, out);
    case DType::kFloat64: return CastEach<double>(values, count, out);
    case DType::kInt8: return CastEach<int8_t>(values, count, out);
    case DType::kUint8: return CastEach<uint8_t>(values, count, out);
    case DType::kInt16: return CastEach<int16_t>(values, count, out);
    case DType::kUint16: return CastEach<uint16_t>(values, count, out);
    case DType::kInt32: return CastEach<int32_t>(values, count, out);
    case DType::kUint32: return CastEach<uint32_t>(values, count, out);
    case DType::kInt64: return CastEach<int64_t>(values, count, out);
    case DType::kUint64: return CastEach<uint64_t>(values, count, out);
  }
}

}  // namespace roboloop::data
