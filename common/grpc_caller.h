// Who made a gRPC call, as the services record it (alias history, leaderboard rows): every
// client sends its login and host name; a server with a tokens file trusts only the name the
// token authenticates (common/grpc_server_credentials.h), one without trusts the client's word.
#pragma once

#include <string>

#include "grpcpp/client_context.h"
#include "grpcpp/server_context.h"

namespace roboloop::common {

// Adds the calling process's login name and host name to a call's metadata.
void AddCallerIdentity(grpc::ClientContext& context);

// The user who made a call: the authenticated caller's name when the server has a tokens file,
// else the login name the client reports, else the server process's own user.
std::string RequestingUser(const grpc::ServerContextBase& context);

// The machine a call came from: the host name the client reports, else its peer address.
std::string RequestingHost(const grpc::ServerContextBase& context);

}  // namespace roboloop::common
