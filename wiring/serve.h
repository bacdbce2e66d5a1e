// Running a service process until it is told to stop (issue 27, req 3): what every `roboloop
// serve …` command does once its server is up.
#pragma once

#include <string>
#include <vector>

#include "common/grpc_server.h"
#include "common/grpc_signals.h"

namespace roboloop::wiring {

// "<service> serving<detail> on <listen address>", followed by " (clients on this machine dial
// <target>)" when the two differ (a server on 0.0.0.0 or [::]).
std::string ServingBanner(const common::GrpcServer& server, const std::string& service, const std::string& detail);

// The warnings a server reachable from other machines deserves, one line each ("WARNING: ..."):
// no bearer token (how to make one), plaintext (calls and token in clear). None on loopback or a
// unix socket.
std::vector<std::string> ExposureWarnings(const common::GrpcServer& server, const std::string& service);

// Prints ExposureWarnings to stderr and ServingBanner to stdout (flushed, so scripts can wait for
// it), serves until SIGINT/SIGTERM arrives through `signals` (created before the server's
// threads), shuts down gracefully and logs which signal stopped it.
void ServeUntilShutdown(common::GrpcServer& server, const common::ShutdownSignals& signals,
                        const std::string& service, const std::string& detail = "");

}  // namespace roboloop::wiring
