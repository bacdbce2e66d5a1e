// Bearer tokens of the roboloop gRPC servers: reading and validating the token, the metadata a
// client sends it under, and the verdict on one call. The verdict is applied to every call of
// every service in one place, inside gRPC core before the call reaches any handler (see
// common/grpc_server_credentials.h); handlers never check tokens themselves.
//
// Health checks (`/grpc.health.v1.Health/*`) are public so probes and load balancers work
// without the token; they reveal only serving states. Every other method, reflection included,
// needs the token.
#pragma once

#include <array>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace roboloop::common {

// Metadata key clients send the token under (value `Bearer <token>`).
inline constexpr char kAuthorizationMetadataKey[] = "authorization";

// Reads a bearer token from `path`: the file's content without surrounding whitespace. Errors
// name the file: unreadable, empty, or holding characters that cannot travel as metadata.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

// Writes a new random bearer token (32 bytes from the system's CSPRNG, as 64 hex digits and a
// newline) to `path`, created with mode 0600 (owner read/write only) and synced. Never replaces
// a file: AlreadyExists naming `path` when one is there; other errors name it too.
absl::Status WriteNewTokenFile(const std::string& path);

// Returns OK if `token` can be sent as a bearer token (non-empty printable ASCII, no spaces).
absl::Status ValidateToken(const std::string& token);

// Returns `Bearer <token>`, the value for the authorization metadata.
std::string BearerMetadataValue(const std::string& token);

// Judges calls against one server's bearer token, comparing in constant time (SHA-256 of both,
// then CRYPTO_memcmp). Immutable, so thread-safe.
class BearerTokenVerifier {
 public:
  // `token` is the one clients must present; see ValidateToken.
  explicit BearerTokenVerifier(absl::string_view token);

  // Returns OK when a call to `method` (its path, e.g. "/grpc.health.v1.Health/Check") may
  // run: the method is public (health checks), or the call's
  // `authorization` metadata (`authorization_values`, one entry per value sent) is exactly
  // one `Bearer <token>`. Otherwise UNAUTHENTICATED with a message saying what was wrong
  // (missing, repeated, malformed or invalid token).
  absl::Status Judge(absl::string_view method,
                     absl::Span<const absl::string_view> authorization_values) const;

 private:
  using Digest = std::array<unsigned char, 32>;

  Digest expected_;  // SHA-256 of the token
};

}  // namespace roboloop::common
