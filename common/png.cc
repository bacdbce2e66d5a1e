#include "common/png.h"

#include <zlib.h>

#include "absl/strings/str_cat.h"

namespace roboloop {
namespace {

void AppendBigEndian(std::string* out, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>((value >> shift) & 0xff));
}

// Length, type, data and the CRC over type and data.
void AppendChunk(std::string* png, const char type[5], const std::string& data) {
  AppendBigEndian(png, static_cast<uint32_t>(data.size()));
  const std::string body = std::string(type, 4) + data;
  png->append(body);
  AppendBigEndian(png, static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(body.data()),
                                                   static_cast<uInt>(body.size()))));
}

}  // namespace

absl::StatusOr<std::string> EncodePngRgb(int width, int height, const std::vector<uint8_t>& rgb) {
  if (width <= 0 || height <= 0 || rgb.size() != static_cast<size_t>(width) * height * 3) {
    return absl::InvalidArgumentError(absl::StrCat("png: ", rgb.size(), " bytes are not a ", width, "x", height,
                                                   " RGB image"));
  }
  std::string raw;
  raw.reserve(static_cast<size_t>(height) * (1 + 3 * width));
  for (int row = 0; row < height; ++row) {
    raw.push_back('\0');  // filter: none
    raw.append(reinterpret_cast<const char*>(rgb.data()) + static_cast<size_t>(row) * 3 * width, 3 * width);
  }
  uLongf packed_size = compressBound(static_cast<uLong>(raw.size()));
  std::string packed(packed_size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(packed.data()), &packed_size, reinterpret_cast<const Bytef*>(raw.data()),
                static_cast<uLong>(raw.size()), 6) != Z_OK) {
    return absl::InternalError("png: zlib compress2 failed");
  }
  packed.resize(packed_size);
  std::string header;
  AppendBigEndian(&header, static_cast<uint32_t>(width));
  AppendBigEndian(&header, static_cast<uint32_t>(height));
  header += std::string("\x08\x02\x00\x00\x00", 5);  // 8 bits, RGB, deflate, filter 0, no interlace
  std::string png("\x89PNG\r\n\x1a\n", 8);
  AppendChunk(&png, "IHDR", header);
  AppendChunk(&png, "IDAT", packed);
  AppendChunk(&png, "IEND", "");
  return png;
}

}  // namespace roboloop
