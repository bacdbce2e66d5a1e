#include "registry/registry_host.h"

#include "common/status.h"

namespace roboloop::registry {

absl::StatusOr<std::unique_ptr<RegistryHost>> RegistryHost::Create(const Options& options) {
  std::unique_ptr<RegistryHost> host(new RegistryHost());
  ROBOLOOP_ASSIGN_OR_RETURN(host->registry_, Registry::Create(options.registry));
  host->service_ = std::make_unique<RegistryServiceImpl>(host->registry_.get(), options.service);
  ROBOLOOP_ASSIGN_OR_RETURN(host->server_,
                            common::GrpcServer::Create(options.server, {host->service_.get()}));
  return host;
}

}  // namespace roboloop::registry
