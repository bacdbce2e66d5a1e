// Test helper: a registry served in-process (registry/registry_host.h) and a client connected to
// it. Header-only, so that only tests linking roboloop::registry_server include it.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "registry/registry_client.h"
#include "registry/registry_host.h"

namespace roboloop::testing {

// A served registry and its client (the client is declared last: it goes first).
struct ServedRegistry {
  std::unique_ptr<registry::RegistryHost> host;
  std::unique_ptr<registry::RegistryClient> client;
};

// Serves the registry at `root` on `listen_address` ("" = the host's default, a loopback port)
// and connects a client; errors are RegistryHost::Create's and RegistryClient::Connect's.
inline absl::StatusOr<ServedRegistry> ServeRegistry(const std::string& root, const std::string& listen_address = "") {
  registry::RegistryHost::Options options;
  options.registry.root = root;
  if (!listen_address.empty()) options.server.listen_address = listen_address;
  absl::StatusOr<std::unique_ptr<registry::RegistryHost>> host = registry::RegistryHost::Create(options);
  if (!host.ok()) return host.status();
  common::GrpcChannelOptions channel;
  channel.target = (*host)->target();
  absl::StatusOr<std::unique_ptr<registry::RegistryClient>> client = registry::RegistryClient::Connect(channel);
  if (!client.ok()) return client.status();
  return ServedRegistry{std::move(*host), std::move(*client)};
}

}  // namespace roboloop::testing
