#include "data/array.h"

#include "absl/strings/str_join.h"

namespace roboloop::data {
namespace {

template <typename T>
void ConvertTyped(const uint8_t* values, int64_t count, double* out) {
  for (int64_t i = 0; i < count; ++i) {
    T value;
    std::memcpy(&value, values + i * sizeof(T), sizeof(T));
    out[i] = static_cast<double>(value);
  }
}

}  // namespace

Array Array::Zeros(DType dtype, std::vector<int64_t> shape) {
  Array array;
  array.dtype = dtype;
  array.shape = std::move(shape);
  array.bytes.assign(array.NumElements() * DTypeSize(dtype), 0);
  return array;
}

int64_t Array::NumElements() const {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

int64_t Array::Steps() const { return shape.empty() ? 1 : shape[0]; }

std::vector<int64_t> Array::StepShape() const {
  if (shape.empty()) return {};
  return std::vector<int64_t>(shape.begin() + 1, shape.end());
}

int64_t Array::ElementsPerStep() const {
  int64_t count = 1;
  for (int64_t dim : StepShape()) count *= dim;
  return count;
}

double Array::ValueAsDouble(int64_t index) const {
  double out = 0;
  ConvertToDouble(dtype, bytes.data() + index * DTypeSize(dtype), 1, &out);
  return out;
}

std::string ShapeToString(const std::vector<int64_t>& shape) {
  return "[" + absl::StrJoin(shape, ", ") + "]";
}

void ConvertToDouble(DType dtype, const uint8_t* values, int64_t count, double* out) {
  switch (dtype) {
    case DType::kFloat32: return ConvertTyped<float>(values, count, out);
    case DType::kFloat64: return ConvertTyped<double>(values, count, out);
    case DType::kInt8: return ConvertTyped<int8_t>(values, count, out);
    case DType::kUint8: return ConvertTyped<uint8_t>(values, count, out);
    case DType::kInt16: return ConvertTyped<int16_t>(values, count, out);
    case DType::kUint16: return ConvertTyped<uint16_t>(values, count, out);
    case DType::kInt32: return ConvertTyped<int32_t>(values, count, out);
    case DType::kUint32: return ConvertTyped<uint32_t>(values, count, out);
    case DType::kInt64: return ConvertTyped<int64_t>(values, count, out);
    case DType::kUint64: return ConvertTyped<uint64_t>(values, count, out);
  }
}

}  // namespace roboloop::data
