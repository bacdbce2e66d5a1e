#include "wiring/serve.h"

#include <cstdio>

#include <spdlog/spdlog.h>

namespace roboloop::wiring {

void ServeUntilShutdown(common::GrpcServer& server, const common::ShutdownSignals& signals,
                        const std::string& service, const std::string& detail) {
  std::printf("%s serving%s on %s\n", service.c_str(), detail.c_str(), server.target().c_str());
  std::fflush(stdout);
  const int signal_number = common::ServeUntilShutdownSignal(server, signals);
  spdlog::info("{} stopped after signal {}", service, signal_number);
}

}  // namespace roboloop::wiring
