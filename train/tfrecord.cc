#include "train/tfrecord.h"

#include "absl/strings/str_cat.h"
#include "train/crc32c.h"

namespace roboloop::train {
namespace {

constexpr int64_t kLengthBytes = 8;
constexpr int64_t kCrcBytes = 4;

void AppendLittleEndian(uint64_t value, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

uint64_t ReadLittleEndian(absl::string_view bytes) {
  uint64_t value = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    value |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  }
  return value;
}

absl::Status RecordError(const std::string& path, int64_t offset, absl::string_view what) {
  return absl::DataLossError(absl::StrCat(path, ": record at offset ", offset, ": ", what));
}

}  // namespace

std::string FrameRecord(absl::string_view data) {
  std::string frame;
  frame.reserve(data.size() + kLengthBytes + 2 * kCrcBytes);
  AppendLittleEndian(data.size(), kLengthBytes, &frame);
  AppendLittleEndian(MaskCrc(Crc32c(frame)), kCrcBytes, &frame);
  frame.append(data.data(), data.size());
  AppendLittleEndian(MaskCrc(Crc32c(data)), kCrcBytes, &frame);
  return frame;
}

absl::StatusOr<std::vector<Record>> ParseRecords(absl::string_view contents,
                                                 const std::string& path) {
  std::vector<Record> records;
  int64_t offset = 0;
  const int64_t size = static_cast<int64_t>(contents.size());
  while (offset < size) {
    if (size - offset < kLengthBytes + kCrcBytes) {
      return RecordError(path, offset, "truncated length header");
    }
    const absl::string_view length_bytes = contents.substr(offset, kLengthBytes);
    const uint64_t length_crc = ReadLittleEndian(contents.substr(offset + kLengthBytes, kCrcBytes));
    if (MaskCrc(Crc32c(length_bytes)) != length_crc) {
      return RecordError(path, offset, "length CRC mismatch");
    }
    const uint64_t length = ReadLittleEndian(length_bytes);
    const int64_t data_offset = offset + kLengthBytes + kCrcBytes;
    if (length > static_cast<uint64_t>(size - data_offset) ||
        size - data_offset - static_cast<int64_t>(length) < kCrcBytes) {
      return RecordError(path, offset, absl::StrCat("truncated data (length ", length, ")"));
    }
    const absl::string_view data = contents.substr(data_offset, length);
    const uint64_t data_crc = ReadLittleEndian(contents.substr(data_offset + length, kCrcBytes));
    if (MaskCrc(Crc32c(data)) != data_crc) return RecordError(path, offset, "data CRC mismatch");
    records.push_back(Record{offset, std::string(data)});
    offset = data_offset + static_cast<int64_t>(length) + kCrcBytes;
  }
  return records;
}

}  // namespace roboloop::train
