// TFRecord framing (the container of TensorBoard event files): each record is a uint64
// little-endian length, the masked CRC-32C of those 8 bytes, the data, and the masked
// CRC-32C of the data (both CRCs uint32 little-endian). Torch-free, pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace roboloop::train {

// `data` framed as one TFRecord.
std::string FrameRecord(absl::string_view data);

// One record read back, with the byte offset of its frame in the file.
struct Record {
  int64_t offset = 0;  // where the record's length field starts
  std::string data;    // the payload
};

// The records of `contents` (the bytes of file `path`, named in errors). Both CRCs of every
// record are verified; a mismatch or a truncated record is DataLoss naming the path and the
// record's offset.
absl::StatusOr<std::vector<Record>> ParseRecords(absl::string_view contents,
                                                 const std::string& path);

}  // namespace roboloop::train
