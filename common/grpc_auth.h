// Bearer-token authentication for every roboloop gRPC server, done as a server interceptor
// (gRPC 1.51's SetAuthMetadataProcessor aborts the process on insecure credentials).
//
// How a call is judged: at POST_RECV_INITIAL_METADATA the interceptor compares the
// `authorization: Bearer <token>` metadata with the server's token in constant time (SHA-256
// of both, then CRYPTO_memcmp). A call that fails is cancelled at once with UNAUTHENTICATED
// and a message saying what was wrong, so the client sees that status for unary and
// streaming calls alike. gRPC 1.51 offers interceptors no way to stop the handler from being
// invoked, so the interceptor also records its verdict in the call's metadata and every
// handler must begin with `CheckCallAuthenticated` (it returns UNAUTHENTICATED for a rejected
// call, so the handler does no work for it).
//
// Health checks (`/grpc.health.v1.Health/*`) are left open so probes and load balancers work
// without the token; they reveal only serving states. Reflection requires the token.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/server_interceptor.h"
#include "grpcpp/support/status.h"

namespace roboloop::common {

// Metadata key clients send the token under (value `Bearer <token>`).
inline constexpr char kAuthorizationMetadataKey[] = "authorization";

// Reads a bearer token from `path`: the file's content without surrounding whitespace. Errors
// name the file: unreadable, empty, or holding characters that cannot travel as metadata.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

// Returns OK if `token` can be sent as a bearer token (non-empty printable ASCII, no spaces).
absl::Status ValidateToken(const std::string& token);

// Returns `Bearer <token>`, the value for the authorization metadata.
std::string BearerMetadataValue(const std::string& token);

// Returns OK when this call passed the server's bearer-token check (or the server needs no
// token); UNAUTHENTICATED when the interceptor rejected it; INTERNAL when the server was not
// built by GrpcServer and so never ran the check. Call it first in every handler.
grpc::Status CheckCallAuthenticated(const grpc::ServerContextBase& context);

// Creates the interceptor factory for a server whose clients must present `token`; an empty
// token admits every call (the verdict is still recorded for CheckCallAuthenticated).
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
MakeBearerTokenInterceptorFactory(const std::string& token);

}  // namespace roboloop::common
