// Parquet tables of LeRobot datasets through Apache Arrow C++: reading whole files, typed column
// access with errors that name the file and column, and writing. Internal to the lerobot library.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <arrow/api.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "data/array.h"

namespace roboloop::data::lerobot {

// A parquet file read whole, and the path it came from (named by every error).
struct ParquetTable {
  std::string path;
  std::shared_ptr<arrow::Table> table;
};

// Reads every row group of the parquet file at `path`. A missing file is NotFound, a file that
// is not parquet (or is damaged) is DataLoss; both name `path`.
absl::StatusOr<ParquetTable> ReadParquet(const std::string& path);

// Writes `table` to `path` (snappy compression, one row group per 64k rows), creating parent
// folders; errors name `path`.
absl::Status WriteParquet(const arrow::Table& table, const std::string& path);

// The values of integer column `column` (int8..int64, uint8..uint32) as int64; errors name the
// file and the column (missing, nulls, not integer).
absl::StatusOr<std::vector<int64_t>> Int64Column(const ParquetTable& table, const std::string& column);

// The values of floating column `column` (float32 or float64) as double.
absl::StatusOr<std::vector<double>> DoubleColumn(const ParquetTable& table, const std::string& column);

// The values of string column `column` (string or large_string).
absl::StatusOr<std::vector<std::string>> StringColumn(const ParquetTable& table, const std::string& column);

// The values of list-of-strings column `column` (e.g. the episodes' `tasks`).
absl::StatusOr<std::vector<std::vector<std::string>>> StringListColumn(const ParquetTable& table,
                                                                       const std::string& column);

// Rows [first, first + count) of numeric column `column` as an Array of `dtype` and shape
// [count, width] (or [count] when `width` is 0, for a scalar column). The column holds scalars
// (width 1) or lists (list, large_list or fixed_size_list) of `width` values, whose Arrow type
// must be `dtype` exactly (bool is read as uint8). Errors name the file, the column and the row.
absl::StatusOr<Array> NumericRows(const ParquetTable& table, const std::string& column, int64_t first,
                                  int64_t count, int64_t width, DType dtype);

// The Arrow type that stores `dtype` ("bool" columns are written as uint8 by roboloop).
std::shared_ptr<arrow::DataType> ArrowTypeOf(DType dtype);

// A column of `rows` rows from `array` ([rows, width] or [rows]): a fixed_size_list of `width`
// values, or a scalar column when `scalar` is true (then width must be 1).
absl::StatusOr<std::shared_ptr<arrow::Array>> ColumnFromArray(const Array& array, bool scalar);

}  // namespace roboloop::data::lerobot
