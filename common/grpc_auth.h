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
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "common/access_roles.h"

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

// A caller a tokens file names, as authenticated for one call.
struct Caller {
  std::string name;  // the entry's name
  Role role = Role::kRead;
};

// Judges calls to one server, in one of two modes:
//  - one token: the call must carry it; it may then call every method (one-user setups);
//  - a tokens file (common/access_roles.h): the call's token must be one of the file's, and
//    that caller's role must reach the role `method_roles` gives the method (a method missing
//    from the table needs admin).
// Tokens are compared as SHA-256 digests with CRYPTO_memcmp, against every entry.
// Thread-safe: Judge and ReloadTokensFile may run concurrently.
class CallVerifier {
 public:
  // One-token mode; `token` is the one clients must present (see ValidateToken).
  static std::unique_ptr<CallVerifier> ForToken(absl::string_view token);

  // Roles mode, reading `tokens_file` now (errors as ReadTokensFile's). With
  // `admin_needs_certificate`, a method that needs admin also needs the second factor: the
  // connection's client certificate, verified against the server's admin CA, must name the
  // caller (its common name equals the caller's name in the tokens file).
  static absl::StatusOr<std::unique_ptr<CallVerifier>> ForTokensFile(
      std::string tokens_file, MethodRoles method_roles, bool admin_needs_certificate = false);

  // Returns the verdict on a call to `method` (its path, e.g. "/grpc.health.v1.Health/Check")
  // whose `authorization` metadata is `authorization_values` (one entry per value sent):
  //  - public methods (health checks) pass with no caller;
  //  - UNAUTHENTICATED when the token is missing, repeated, malformed or unknown;
  //  - PERMISSION_DENIED naming the method, the role it needs and the caller's name and role;
  //  - PERMISSION_DENIED for an admin method when admin needs a certificate and
  //    `certified_name` (the common name of the connection's verified client certificate, ""
  //    when it presented none) is not the caller's name;
  //  - otherwise the caller (roles mode) or no caller (one-token mode).
  absl::StatusOr<std::optional<Caller>> Judge(absl::string_view method,
                                              absl::Span<const absl::string_view> authorization_values,
                                              absl::string_view certified_name = {}) const;

  // True when admin methods need a client certificate naming the caller (ForTokensFile).
  bool admin_needs_certificate() const { return admin_needs_certificate_; }

  // Roles mode: re-reads the tokens file and, when it is valid, replaces the callers (calls
  // already admitted are not affected). On error keeps the current callers and returns the
  // error. One-token mode: FailedPrecondition (there is no file to re-read).
  absl::Status ReloadTokensFile();

 private:
  using Digest = std::array<unsigned char, 32>;
  struct Entry {
    Digest digest;
    Caller caller;
  };

  CallVerifier(std::string tokens_file, MethodRoles method_roles, bool admin_needs_certificate,
               std::vector<Entry> entries);
  static absl::StatusOr<std::vector<Entry>> ReadEntries(const std::string& tokens_file);

  const std::string tokens_file_;   // empty in one-token mode
  const MethodRoles method_roles_;  // unused in one-token mode
  const bool admin_needs_certificate_;
  mutable absl::Mutex mutex_;
  std::vector<Entry> entries_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace roboloop::common
