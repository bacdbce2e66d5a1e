// A running registry: the Registry over a root folder, its gRPC service and the server that
// hosts it. Used by `roboloop serve registry` and by the CLI's embedded mode.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/grpc_server.h"
#include "registry/registry.h"
#include "registry/registry_service.h"

namespace roboloop::registry {

// Thread-safe as its parts are; Shutdown may be called from any thread.
class RegistryHost {
 public:
  struct Options {
    Registry::Options registry;           // the store (root folder, GC grace, durability)
    common::GrpcServerOptions server;     // where and how to listen
    RegistryServiceImpl::Options service; // service tuning
  };

  // Opens the registry at options.registry.root and starts serving it.
  static absl::StatusOr<std::unique_ptr<RegistryHost>> Create(const Options& options);

  // Address clients dial (HOST:PORT or unix:PATH).
  const std::string& target() const { return server_->target(); }
  // The registry itself, for in-process use.
  Registry& registry() { return *registry_; }
  // The server, e.g. to wait for a shutdown signal.
  common::GrpcServer& server() { return *server_; }

  // Stops serving gracefully (see GrpcServer::Shutdown).
  void Shutdown() { server_->Shutdown(); }

 private:
  RegistryHost() = default;

  std::unique_ptr<Registry> registry_;
  std::unique_ptr<RegistryServiceImpl> service_;
  std::unique_ptr<common::GrpcServer> server_;
};

}  // namespace roboloop::registry
