// Content hash of a file, for lineage records.
// Merge boundary: this is the data module's only hashing need; the lead forwards it to
// common/sha256 when that lands (same contract: lowercase hex of the file's bytes).
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace roboloop::data {

// Returns the lowercase hex sha256 of the bytes of the file at `path`; an unreadable file is
// an error naming `path`.
absl::StatusOr<std::string> Sha256File(const std::string& path);

}  // namespace roboloop::data
