// Module-internal: validation steps on an open HDF5 file, shared by ValidateFile and
// DatasetReader.
#pragma once

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

}  // namespace roboloop::data::internal
