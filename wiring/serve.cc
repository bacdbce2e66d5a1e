#include "wiring/serve.h"

#include <cstdio>

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"

namespace roboloop::wiring {

std::string ServingBanner(const common::GrpcServer& server, const std::string& service, const std::string& detail) {
  const std::string dial = server.target() == server.listen_address()
                               ? std::string()
                               : absl::StrCat(" (clients on this machine dial ", server.target(), ")");
  return absl::StrCat(service, " serving", detail, " on ", server.listen_address(), dial);
}

std::vector<std::string> ExposureWarnings(const common::GrpcServer& server, const std::string& service) {
  if (server.loopback_only()) return {};
  std::vector<std::string> warnings;
  const std::string where = absl::StrCat(service, " listens on ", server.listen_address(),
                                         ", which other machines can reach");
  if (!server.authenticates()) {
    warnings.push_back(absl::StrCat(
        "WARNING: ", where, ", without authentication: anyone who reaches the port can call every method. "
        "Make a token with `roboloop serve token -o FILE` and pass --token-file FILE (docs/services.md)"));
  }
  if (!server.uses_tls()) {
    warnings.push_back(absl::StrCat("WARNING: ", where,
                                    ", in plaintext: calls", server.authenticates() ? " and the bearer token" : "",
                                    " travel in clear; give --tls-cert and --tls-key"));
  }
  return warnings;
}

void ServeUntilShutdown(common::GrpcServer& server, const common::ShutdownSignals& signals,
                        const std::string& service, const std::string& detail) {
  for (const std::string& warning : ExposureWarnings(server, service)) std::fprintf(stderr, "%s\n", warning.c_str());
  std::fflush(stderr);
  std::printf("%s\n", ServingBanner(server, service, detail).c_str());
  std::fflush(stdout);
  const int signal_number = common::ServeUntilShutdownSignal(server, signals);
  spdlog::info("{} stopped after signal {}", service, signal_number);
}

}  // namespace roboloop::wiring
