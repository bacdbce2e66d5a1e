// CRC-32C (Castagnoli) as used by TFRecord framing. Torch-free, thread-safe.
#pragma once

#include <cstdint>

#include "absl/strings/string_view.h"

namespace roboloop::train {

// CRC-32C of `data`: reflected polynomial 0x82F63B78, initial value and final xor 0xFFFFFFFF
// (crc32c("123456789") = 0xE3069283).
uint32_t Crc32c(absl::string_view data);

// TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8, all mod 2^32.
uint32_t MaskCrc(uint32_t crc);

}  // namespace roboloop::train
