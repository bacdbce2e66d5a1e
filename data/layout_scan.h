// Module-internal: validation steps on an open HDF5 file, shared by ValidateFile and
// DatasetReader.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/validation.h"
#include "hdf5.h"

namespace roboloop::data::internal {

// Checks groups, datasets, lengths, attributes, specs across demos and masks of `file`.
// Warnings go to `warnings`; the first error is returned, prefixed with `file_name`.
absl::StatusOr<DatasetLayout> ScanLayout(hid_t file, const std::string& file_name,
                                         std::vector<ValidationIssue>* warnings);

// Reads every float feature of every demo looking for NaN/Inf: under kStrict the first
// finding is returned as an error, under kLenient every finding goes to `warnings`.
absl::Status ScanValues(hid_t file, const std::string& file_name, const DatasetLayout& layout,
                        NanPolicy policy, std::vector<ValidationIssue>* warnings);

// Checks the `stats` group of `file`, if any: a group whose `stats/<feature>/` groups each name a
// vector, scalar or image feature of `layout` and hold mean, std, min, max, q01 and q99 as float
// datasets of one value per element (per RGB channel of an image key), every value finite,
// std >= 0 and min <= max. InvalidArgument "<file_name>: stats/<feature>/<field>: <what>" with a
// hint to recompute them otherwise.
absl::Status CheckStoredStats(hid_t file, const std::string& file_name, const DatasetLayout& layout);

// The NaN/Inf finding among `elements` float32 or float64 values (dtype `dtype`, `per_step`
// values per step) of the dataset `path`, e.g. "2 NaN/Inf values (first at step 5)"; nullopt
// when every value is finite. `values` start at step `first_step` of the dataset.
std::optional<ValidationIssue> FindNonFinite(DType dtype, const void* values, int64_t elements,
                                             int64_t per_step, const std::string& path, int64_t first_step = 0);

// Applies `policy` to a finding of `file_name`: under kStrict it is returned as an error
// "<file_name>: <path>: <message>", under kLenient it is appended to `warnings`.
absl::Status ApplyNanPolicy(const std::string& file_name, NanPolicy policy,
                            ValidationIssue issue, std::vector<ValidationIssue>* warnings);

}  // namespace roboloop::data::internal
