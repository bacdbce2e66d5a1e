// The credentials every roboloop gRPC listener is bound with: plaintext or TLS, plus the
// server's bearer-token check, run by gRPC core on each call's metadata before the call is
// matched to a service. A call the check refuses ends with UNAUTHENTICATED and never reaches
// a handler, whatever the service, method or server API (sync, callback, generic); handlers
// need no authentication code of their own.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/grpc_tls.h"
#include "grpcpp/security/server_credentials.h"

namespace roboloop::common {

// Creates listener credentials: TLS with `tls` when set, plaintext otherwise. With a non-empty
// `token` (see ValidateToken) every call to a non-public method must carry
// `authorization: Bearer <token>` (common/grpc_auth.h); an empty `token` admits every call.
std::shared_ptr<grpc::ServerCredentials> MakeAuthenticatingServerCredentials(
    const std::optional<TlsKeyPair>& tls, const std::string& token);

}  // namespace roboloop::common
