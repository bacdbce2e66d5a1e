#include "data/lerobot_parquet.h"

#include <cstring>
#include <filesystem>
#include <functional>

#include <arrow/io/file.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/writer.h>
#include <parquet/exception.h>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace roboloop::data::lerobot {
namespace {

absl::Status FromArrow(const arrow::Status& status, const std::string& path) {
  if (status.ok()) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat(path, ": ", status.ToString()));
}

absl::StatusOr<std::shared_ptr<arrow::ChunkedArray>> Column(const ParquetTable& table, const std::string& column) {
  std::shared_ptr<arrow::ChunkedArray> values = table.table->GetColumnByName(column);
  if (values == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(table.path, ": no column '", column, "'"));
  }
  if (values->null_count() > 0) {
    return absl::InvalidArgumentError(absl::StrCat(table.path, ": column '", column, "' has ",
                                                   values->null_count(), " null values"));
  }
  return values;
}

absl::Status WrongType(const ParquetTable& table, const std::string& column, const arrow::DataType& type,
                       const std::string& expected) {
  return absl::InvalidArgumentError(
      absl::StrCat(table.path, ": column '", column, "' is ", type.ToString(), ", expected ", expected));
}

// Copies `count` elements of primitive array `values` from element `offset` into `out`.
absl::Status CopyPrimitive(const arrow::Array& values, int64_t offset, int64_t count, DType dtype, uint8_t* out) {
  if (values.type_id() == arrow::Type::BOOL) {
    const auto& bools = static_cast<const arrow::BooleanArray&>(values);
    for (int64_t i = 0; i < count; ++i) out[i] = bools.Value(offset + i) ? 1 : 0;
    return absl::OkStatus();
  }
  const auto& primitive = static_cast<const arrow::PrimitiveArray&>(values);
  const int64_t size = DTypeSize(dtype);
  const uint8_t* base = primitive.values()->data() + (primitive.offset() + offset) * size;
  std::memcpy(out, base, count * size);
  return absl::OkStatus();
}

bool SameType(const arrow::DataType& type, DType dtype) {
  if (dtype == DType::kUint8 && type.id() == arrow::Type::BOOL) return true;
  return type.Equals(*ArrowTypeOf(dtype));
}

// The values of a list, large_list or fixed_size_list chunk and where each row starts in them.
struct ListRows {
  std::shared_ptr<arrow::Array> values;
  std::function<int64_t(int64_t)> offset;  // row i spans [offset(i), offset(i + 1))
};

ListRows AsListRows(const arrow::Array& chunk) {
  if (chunk.type_id() == arrow::Type::LIST) {
    const auto& lists = static_cast<const arrow::ListArray&>(chunk);
    return {lists.values(), [&lists](int64_t i) -> int64_t { return lists.value_offset(i); }};
  }
  if (chunk.type_id() == arrow::Type::LARGE_LIST) {
    const auto& lists = static_cast<const arrow::LargeListArray&>(chunk);
    return {lists.values(), [&lists](int64_t i) -> int64_t { return lists.value_offset(i); }};
  }
  const auto& lists = static_cast<const arrow::FixedSizeListArray&>(chunk);
  return {lists.values(), [&lists](int64_t i) -> int64_t { return lists.value_offset(i); }};
}

// Copies the rows of one chunk ([count] scalars or lists of `width`) into `out`.
absl::Status CopyChunk(const ParquetTable& table, const std::string& column, const arrow::Array& chunk,
                       int64_t width, DType dtype, int64_t first_row, uint8_t* out) {
  const int64_t rows = chunk.length();
  const int64_t element = DTypeSize(dtype);
  const std::string expected = absl::StrCat(DTypeName(dtype), width > 1 ? absl::StrCat(" lists of ", width) : "");
  switch (chunk.type_id()) {
    case arrow::Type::LIST:
    case arrow::Type::LARGE_LIST:
    case arrow::Type::FIXED_SIZE_LIST: {
      const ListRows lists = AsListRows(chunk);
      if (!SameType(*lists.values->type(), dtype)) return WrongType(table, column, *chunk.type(), expected);
      const int64_t expected_length = std::max<int64_t>(width, 1);
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t length = lists.offset(i + 1) - lists.offset(i);
        if (length != expected_length) {
          return absl::InvalidArgumentError(absl::StrCat(table.path, ": column '", column, "' row ", first_row + i,
                                                         " holds ", length, " values, expected ", expected_length));
        }
        ROBOLOOP_RETURN_IF_ERROR(CopyPrimitive(*lists.values, lists.offset(i), length, dtype, out + i * length * element));
      }
      return absl::OkStatus();
    }
    default:
      if (width > 1 || !SameType(*chunk.type(), dtype)) return WrongType(table, column, *chunk.type(), expected);
      return CopyPrimitive(chunk, 0, rows, dtype, out);
  }
}

}  // namespace

absl::StatusOr<ParquetTable> ReadParquet(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  }
  arrow::Result<std::shared_ptr<arrow::io::ReadableFile>> file = arrow::io::ReadableFile::Open(path);
  ROBOLOOP_RETURN_IF_ERROR(FromArrow(file.status(), path));
  ParquetTable result{path, nullptr};
  try {
    arrow::Result<std::unique_ptr<parquet::arrow::FileReader>> reader =
        parquet::arrow::OpenFile(*file, arrow::default_memory_pool());
    ROBOLOOP_RETURN_IF_ERROR(FromArrow(reader.status(), path));
    arrow::Result<std::shared_ptr<arrow::Table>> table = (*reader)->ReadTable();
    ROBOLOOP_RETURN_IF_ERROR(FromArrow(table.status(), path));
    result.table = *std::move(table);
  } catch (const parquet::ParquetException& e) {
    return absl::DataLossError(absl::StrCat(path, ": not a readable parquet file (", e.what(), ")"));
  }
  return result;
}

absl::Status WriteParquet(const arrow::Table& table, const std::string& path) {
  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), error);
  if (error) return ErrnoStatus(error.value(), path);
  arrow::Result<std::shared_ptr<arrow::io::FileOutputStream>> sink = arrow::io::FileOutputStream::Open(path);
  ROBOLOOP_RETURN_IF_ERROR(FromArrow(sink.status(), path));
  std::shared_ptr<parquet::WriterProperties> properties =
      parquet::WriterProperties::Builder().compression(parquet::Compression::SNAPPY)->build();
  // The Arrow schema (and its metadata, e.g. pandas' index columns) is stored as pyarrow does.
  std::shared_ptr<parquet::ArrowWriterProperties> arrow_properties =
      parquet::ArrowWriterProperties::Builder().store_schema()->build();
  ROBOLOOP_RETURN_IF_ERROR(FromArrow(
      parquet::arrow::WriteTable(table, arrow::default_memory_pool(), *sink, 64 * 1024, properties, arrow_properties),
      path));
  return FromArrow((*sink)->Close(), path);
}

absl::StatusOr<std::vector<int64_t>> Int64Column(const ParquetTable& table, const std::string& column) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::shared_ptr<arrow::ChunkedArray> values, Column(table, column));
  if (!arrow::is_integer(values->type()->id())) return WrongType(table, column, *values->type(), "integers");
  std::vector<int64_t> out;
  out.reserve(values->length());
  for (const std::shared_ptr<arrow::Array>& chunk : values->chunks()) {
    for (int64_t i = 0; i < chunk->length(); ++i) {
      arrow::Result<std::shared_ptr<arrow::Scalar>> scalar = chunk->GetScalar(i);
      ROBOLOOP_RETURN_IF_ERROR(FromArrow(scalar.status(), table.path));
      arrow::Result<std::shared_ptr<arrow::Scalar>> cast = (*scalar)->CastTo(arrow::int64());
      ROBOLOOP_RETURN_IF_ERROR(FromArrow(cast.status(), table.path));
      out.push_back(static_cast<const arrow::Int64Scalar&>(**cast).value);
    }
  }
  return out;
}

absl::StatusOr<std::vector<double>> DoubleColumn(const ParquetTable& table, const std::string& column) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::shared_ptr<arrow::ChunkedArray> values, Column(table, column));
  const arrow::Type::type id = values->type()->id();
  if (id != arrow::Type::FLOAT && id != arrow::Type::DOUBLE) {
    return WrongType(table, column, *values->type(), "float32 or float64");
  }
  std::vector<double> out;
  out.reserve(values->length());
  for (const std::shared_ptr<arrow::Array>& chunk : values->chunks()) {
    for (int64_t i = 0; i < chunk->length(); ++i) {
      out.push_back(id == arrow::Type::FLOAT ? static_cast<const arrow::FloatArray&>(*chunk).Value(i)
                                             : static_cast<const arrow::DoubleArray&>(*chunk).Value(i));
    }
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> StringColumn(const ParquetTable& table, const std::string& column) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::shared_ptr<arrow::ChunkedArray> values, Column(table, column));
  const arrow::Type::type id = values->type()->id();
  if (id != arrow::Type::STRING && id != arrow::Type::LARGE_STRING) {
    return WrongType(table, column, *values->type(), "strings");
  }
  std::vector<std::string> out;
  for (const std::shared_ptr<arrow::Array>& chunk : values->chunks()) {
    for (int64_t i = 0; i < chunk->length(); ++i) {
      out.push_back(id == arrow::Type::STRING ? static_cast<const arrow::StringArray&>(*chunk).GetString(i)
                                              : static_cast<const arrow::LargeStringArray&>(*chunk).GetString(i));
    }
  }
  return out;
}

absl::StatusOr<std::vector<std::vector<std::string>>> StringListColumn(const ParquetTable& table,
                                                                       const std::string& column) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::shared_ptr<arrow::ChunkedArray> values, Column(table, column));
  const auto* list_type = dynamic_cast<const arrow::ListType*>(values->type().get());
  if (list_type == nullptr || list_type->value_type()->id() != arrow::Type::STRING) {
    return WrongType(table, column, *values->type(), "lists of strings");
  }
  std::vector<std::vector<std::string>> out;
  for (const std::shared_ptr<arrow::Array>& chunk : values->chunks()) {
    const auto& lists = static_cast<const arrow::ListArray&>(*chunk);
    const auto& strings = static_cast<const arrow::StringArray&>(*lists.values());
    for (int64_t i = 0; i < lists.length(); ++i) {
      std::vector<std::string> row;
      for (int64_t j = lists.value_offset(i); j < lists.value_offset(i + 1); ++j) row.push_back(strings.GetString(j));
      out.push_back(std::move(row));
    }
  }
  return out;
}

absl::StatusOr<Array> NumericRows(const ParquetTable& table, const std::string& column, int64_t first,
                                  int64_t count, int64_t width, DType dtype) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::shared_ptr<arrow::ChunkedArray> values, Column(table, column));
  if (first < 0 || first + count > values->length()) {
    return absl::OutOfRangeError(absl::StrCat(table.path, ": rows [", first, ", ", first + count, ") of column '",
                                              column, "' lie past its ", values->length(), " rows"));
  }
  Array array = Array::Zeros(dtype, width == 0 ? std::vector<int64_t>{count} : std::vector<int64_t>{count, width});
  const int64_t row_bytes = std::max<int64_t>(width, 1) * DTypeSize(dtype);
  int64_t row = 0;
  const std::shared_ptr<arrow::ChunkedArray> rows = values->Slice(first, count);
  for (const std::shared_ptr<arrow::Array>& chunk : rows->chunks()) {
    ROBOLOOP_RETURN_IF_ERROR(
        CopyChunk(table, column, *chunk, width, dtype, first + row, array.bytes.data() + row * row_bytes));
    row += chunk->length();
  }
  return array;
}

std::shared_ptr<arrow::DataType> ArrowTypeOf(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return arrow::float32();
    case DType::kFloat64: return arrow::float64();
    case DType::kInt8: return arrow::int8();
    case DType::kUint8: return arrow::uint8();
    case DType::kInt16: return arrow::int16();
    case DType::kUint16: return arrow::uint16();
    case DType::kInt32: return arrow::int32();
    case DType::kUint32: return arrow::uint32();
    case DType::kInt64: return arrow::int64();
    case DType::kUint64: return arrow::uint64();
  }
  return arrow::null();
}

absl::StatusOr<std::shared_ptr<arrow::Array>> ColumnFromArray(const Array& array, bool scalar) {
  const int64_t rows = array.Steps();
  const int64_t width = array.ElementsPerStep();
  arrow::Result<std::unique_ptr<arrow::Buffer>> buffer = arrow::AllocateBuffer(static_cast<int64_t>(array.bytes.size()));
  if (!buffer.ok()) return absl::ResourceExhaustedError(buffer.status().ToString());
  if (!array.bytes.empty()) std::memcpy((*buffer)->mutable_data(), array.bytes.data(), array.bytes.size());
  std::shared_ptr<arrow::Array> values = arrow::MakeArray(arrow::ArrayData::Make(
      ArrowTypeOf(array.dtype), rows * width, {nullptr, std::shared_ptr<arrow::Buffer>(*std::move(buffer))}));
  if (scalar) {
    if (width != 1) return absl::InvalidArgumentError(absl::StrCat("a scalar column needs width 1, not ", width));
    return values;
  }
  arrow::Result<std::shared_ptr<arrow::Array>> list = arrow::FixedSizeListArray::FromArrays(values, static_cast<int32_t>(width));
  if (!list.ok()) return absl::InternalError(list.status().ToString());
  return *list;
}

}  // namespace roboloop::data::lerobot
