// A PNG encoder for 8-bit RGB images (zlib deflate, filter 0), enough for report frames.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace roboloop {

// The PNG bytes of a `width` x `height` RGB image whose rows are stored top to bottom in
// `rgb` (3 bytes per pixel). InvalidArgument when the sizes do not match.
absl::StatusOr<std::string> EncodePngRgb(int width, int height, const std::vector<uint8_t>& rgb);

}  // namespace roboloop
