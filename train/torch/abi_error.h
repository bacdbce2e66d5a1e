// How the torch library's C entry points (policy_abi.h, trainer_abi.h) hand an error message
// back to their caller.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>

namespace roboloop::train {

// Copies `message` into the caller's buffer of `error_cap` bytes, cut to fit and always
// NUL-terminated; does nothing when the caller passed no buffer (null or zero capacity).
inline void WriteAbiError(const std::string& message, char* error_buf, size_t error_cap) {
  if (error_buf == nullptr || error_cap == 0) return;
  const size_t n = std::min(message.size(), error_cap - 1);
  std::memcpy(error_buf, message.data(), n);
  error_buf[n] = '\0';
}

}  // namespace roboloop::train
