#include "common/grpc_auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace roboloop::common {
namespace {

constexpr char kBearerPrefix[] = "bearer ";
constexpr char kHealthMethodPrefix[] = "/grpc.health.v1.Health/";

std::array<unsigned char, 32> Sha256Digest(absl::string_view data) {
  std::array<unsigned char, 32> digest{};
  unsigned int size = 0;
  ROBOLOOP_CHECK(EVP_Digest(data.data(), data.size(), digest.data(), &size, EVP_sha256(),
                            nullptr) == 1);
  return digest;
}

// Whether `method` is served without a token.
bool IsPublicMethod(absl::string_view method) {
  return absl::StartsWith(method, kHealthMethodPrefix);
}

// The token of a call's `authorization` metadata, which must be exactly one `Bearer <token>`.
absl::StatusOr<absl::string_view> PresentedToken(
    absl::Span<const absl::string_view> authorization_values) {
  if (authorization_values.empty()) {
    return absl::UnauthenticatedError(
        "missing bearer token: send metadata 'authorization: Bearer <token>'");
  }
  if (authorization_values.size() > 1) {
    return absl::UnauthenticatedError("more than one 'authorization' metadata entry");
  }
  const absl::string_view value = authorization_values.front();
  if (!absl::StartsWithIgnoreCase(value, kBearerPrefix)) {
    return absl::UnauthenticatedError(
        "'authorization' metadata is not of the form 'Bearer <token>'");
  }
  return value.substr(std::strlen(kBearerPrefix));
}

}  // namespace

absl::Status ValidateToken(const std::string& token) {
  if (token.empty()) return absl::InvalidArgumentError("bearer token is empty");
  for (const char c : token) {
    if (c <= ' ' || c > '~') {
      return absl::InvalidArgumentError(
          "bearer token holds a space or a non-printable/non-ASCII character");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoStatus(errno, absl::StrCat("token file '", path, "'"));
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) return ErrnoStatus(errno, absl::StrCat("reading token file '", path, "'"));
  std::string token(absl::StripAsciiWhitespace(content.str()));
  ROBOLOOP_RETURN_IF_ERROR(Annotate(ValidateToken(token), absl::StrCat("token file '", path, "'")));
  return token;
}

absl::Status WriteNewTokenFile(const std::string& path) {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    return absl::InternalError(absl::StrCat("token file '", path, "': the system's random generator failed"));
  }
  const std::string line =
      absl::StrCat(absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes))), "\n");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) {
      return absl::AlreadyExistsError(absl::StrCat("token file '", path, "' exists; a new token never replaces one"));
    }
    return ErrnoStatus(errno, absl::StrCat("creating token file '", path, "'"));
  }
  const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) && ::fsync(fd) == 0;
  const int write_errno = errno;
  ::close(fd);
  if (!written) return ErrnoStatus(write_errno, absl::StrCat("writing token file '", path, "'"));
  return absl::OkStatus();
}

std::string BearerMetadataValue(const std::string& token) {
  return absl::StrCat("Bearer ", token);
}

std::unique_ptr<CallVerifier> CallVerifier::ForToken(absl::string_view token) {
  std::vector<Entry> entries = {{Sha256Digest(token), Caller{"token", Role::kAdmin}}};
  return std::unique_ptr<CallVerifier>(new CallVerifier("", {}, false, std::move(entries)));
}

absl::StatusOr<std::unique_ptr<CallVerifier>> CallVerifier::ForTokensFile(
    std::string tokens_file, MethodRoles method_roles, bool admin_needs_certificate) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<Entry> entries, ReadEntries(tokens_file));
  return std::unique_ptr<CallVerifier>(new CallVerifier(
      std::move(tokens_file), std::move(method_roles), admin_needs_certificate, std::move(entries)));
}

CallVerifier::CallVerifier(std::string tokens_file, MethodRoles method_roles,
                           bool admin_needs_certificate, std::vector<Entry> entries)
    : tokens_file_(std::move(tokens_file)),
      method_roles_(std::move(method_roles)),
      admin_needs_certificate_(admin_needs_certificate),
      entries_(std::move(entries)) {}

absl::StatusOr<std::vector<CallVerifier::Entry>> CallVerifier::ReadEntries(
    const std::string& tokens_file) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<TokenEntry> tokens, ReadTokensFile(tokens_file));
  std::vector<Entry> entries;
  for (const TokenEntry& token : tokens) {
    const std::string bytes = absl::HexStringToBytes(token.sha256);  // checked: 64 hex digits
    Entry entry{{}, Caller{token.name, token.role}};
    std::copy(bytes.begin(), bytes.end(), entry.digest.begin());
    entries.push_back(std::move(entry));
  }
  return entries;
}

absl::StatusOr<std::optional<Caller>> CallVerifier::Judge(
    absl::string_view method, absl::Span<const absl::string_view> authorization_values,
    absl::string_view certified_name) const {
  if (IsPublicMethod(method)) return std::optional<Caller>();
  ROBOLOOP_ASSIGN_OR_RETURN(absl::string_view token, PresentedToken(authorization_values));
  const Digest presented = Sha256Digest(token);
  std::optional<Caller> caller;
  {
    absl::MutexLock lock(&mutex_);
    for (const Entry& entry : entries_) {
      if (CRYPTO_memcmp(presented.data(), entry.digest.data(), presented.size()) == 0) {
        caller = entry.caller;
      }
    }
  }
  if (!caller) return absl::UnauthenticatedError("invalid bearer token");
  if (tokens_file_.empty()) return std::optional<Caller>();
  const auto needed = method_roles_.find(method);
  const Role role = needed == method_roles_.end() ? Role::kAdmin : needed->second;
  if (caller->role < role) {
    return absl::PermissionDeniedError(absl::StrCat(
        method, " needs role '", RoleName(role), "'; caller '", caller->name, "' has role '",
        RoleName(caller->role), "'"));
  }
  if (role == Role::kAdmin && admin_needs_certificate_ && certified_name != caller->name) {
    return absl::PermissionDeniedError(absl::StrCat(
        method, " needs role 'admin' and a client certificate for '", caller->name,
        "' signed by the server's admin CA (second factor); the connection presented ",
        certified_name.empty() ? "none" : absl::StrCat("one for '", certified_name, "'")));
  }
  return caller;
}

absl::Status CallVerifier::ReloadTokensFile() {
  if (tokens_file_.empty()) {
    return absl::FailedPreconditionError("this server checks one token, not a tokens file");
  }
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<Entry> entries, ReadEntries(tokens_file_));
  absl::MutexLock lock(&mutex_);
  entries_ = std::move(entries);
  return absl::OkStatus();
}

}  // namespace roboloop::common
