#include "common/sha256.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "common/status.h"

namespace roboloop {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  ROBOLOOP_CHECK_MSG(ctx_ != nullptr, "EVP_MD_CTX_new failed");
  ROBOLOOP_CHECK(EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) == 1);
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::Update(absl::Span<const uint8_t> data) {
  ROBOLOOP_CHECK_MSG(!finished_, "Sha256::Update after HexDigest");
  ROBOLOOP_CHECK(EVP_DigestUpdate(ctx_, data.data(), data.size()) == 1);
}

void Sha256::Update(absl::string_view data) {
  Update(absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(data.data()), data.size()));
}

std::string Sha256::HexDigest() {
  ROBOLOOP_CHECK_MSG(!finished_, "Sha256::HexDigest called twice");
  finished_ = true;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  ROBOLOOP_CHECK(EVP_DigestFinal_ex(ctx_, digest, &length) == 1);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 0xf]);
  }
  return hex;
}

std::string Sha256Hex(absl::string_view data) {
  Sha256 hasher;
  hasher.Update(data);
  return hasher.HexDigest();
}

absl::StatusOr<std::string> Sha256File(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("cannot open ", path));
  Sha256 hasher;
  std::vector<uint8_t> buffer(1 << 20);
  while (true) {
    ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int saved = errno;
      ::close(fd);
      return ErrnoStatus(saved, absl::StrCat("cannot read ", path));
    }
    if (n == 0) break;
    hasher.Update(absl::Span<const uint8_t>(buffer.data(), static_cast<size_t>(n)));
  }
  ::close(fd);
  return hasher.HexDigest();
}

bool IsLowerHex(absl::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    bool digit = c >= '0' && c <= '9';
    bool letter = c >= 'a' && c <= 'f';
    if (!digit && !letter) return false;
  }
  return true;
}

bool IsSha256Hex(absl::string_view text) { return text.size() == 64 && IsLowerHex(text); }

}  // namespace roboloop
