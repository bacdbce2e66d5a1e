#include "data/dtype.h"

#include <array>
#include <cstddef>

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

}  // namespace

const char* DTypeName(DType dtype) { return EntryOf(dtype).name; }

int64_t DTypeSize(DType dtype) { return EntryOf(dtype).size; }

bool IsFloating(DType dtype) { return dtype == DType::kFloat32 || dtype == DType::kFloat64; }

}  // namespace roboloop::data
