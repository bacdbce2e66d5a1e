// The credentials every roboloop gRPC listener is bound with: plaintext or TLS, plus the
// server's bearer-token check, run by gRPC core on each call's metadata before the call is
// matched to a service. A call the check refuses ends with UNAUTHENTICATED and never reaches
// a handler, whatever the service, method or server API (sync, callback, generic); handlers
// need no authentication code of their own.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/grpc_auth.h"
#include "common/grpc_tls.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/server_interceptor.h"
#include "grpcpp/security/server_credentials.h"

namespace roboloop::common {

// Creates listener credentials: TLS with `tls` when set, plaintext otherwise. With TLS and a
// `client_ca_pem` (PEM roots), clients may present a certificate, which must verify against it;
// the verifier sees its common name. With a `verifier`, every call is judged by it
// (common/grpc_auth.h) before it reaches a handler; without one every call is admitted.
std::shared_ptr<grpc::ServerCredentials> MakeAuthenticatingServerCredentials(
    const std::optional<TlsKeyPair>& tls, const std::string& client_ca_pem,
    std::shared_ptr<const CallVerifier> verifier);

// A server interceptor that tells handlers who called: in each call's received metadata it
// replaces whatever the client sent under the caller key by the name of the caller `verifier`
// authenticates (tokens-file mode), or by nothing. (gRPC core shares one auth context among the
// calls of a connection, so the caller cannot be stored there.) Install it on every server,
// with or without a verifier, so that no client can claim a name.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> MakeCallerInterceptorFactory(
    std::shared_ptr<const CallVerifier> verifier);

// The authenticated caller's name of a call ("" when the server has no tokens file).
std::string AuthenticatedCaller(const grpc::ServerContextBase& context);

}  // namespace roboloop::common
