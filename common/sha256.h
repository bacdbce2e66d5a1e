// Streaming SHA-256 (OpenSSL EVP) and hex helpers for content addressing.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

struct evp_md_ctx_st;

namespace roboloop {

// Incremental SHA-256 of a byte stream. Not thread-safe: one owner feeds and finalizes it.
class Sha256 {
 public:
  // Starts an empty digest.
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  // Feeds `data`. Calling it after HexDigest() is a bug (CHECK).
  void Update(absl::Span<const uint8_t> data);
  // Feeds the bytes of `data`.
  void Update(absl::string_view data);
  // Finalizes and returns the 64-character lowercase hex digest. May be called once.
  std::string HexDigest();

 private:
  evp_md_ctx_st* ctx_;
  bool finished_ = false;
};

// Returns the lowercase hex SHA-256 of `data`.
std::string Sha256Hex(absl::string_view data);

// Streams the file at `path` and returns its lowercase hex SHA-256; errors name the path.
absl::StatusOr<std::string> Sha256File(const std::string& path);

// True when `text` is exactly 64 lowercase hex characters (a full sha256 id).
bool IsSha256Hex(absl::string_view text);

// True when `text` is non-empty and only lowercase hex characters.
bool IsLowerHex(absl::string_view text);

}  // namespace roboloop
