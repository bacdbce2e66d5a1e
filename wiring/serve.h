// Running a service process until it is told to stop (issue 27, req 3): what every `roboloop
// serve …` command does once its server is up.
#pragma once

#include <string>

#include "common/grpc_server.h"
#include "common/grpc_signals.h"

namespace roboloop::wiring {

// Prints "<service> serving<detail> on <target>" to stdout (flushed, so scripts can wait for
// it), serves until SIGINT/SIGTERM arrives through `signals` (created before the server's
// threads), shuts down gracefully and logs which signal stopped it.
void ServeUntilShutdown(common::GrpcServer& server, const common::ShutdownSignals& signals,
                        const std::string& service, const std::string& detail = "");

}  // namespace roboloop::wiring
