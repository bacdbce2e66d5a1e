// How CLI commands reach a registry: a remote RegistryService, or by default an in-process
// one on a unix socket over a local store — both through the same RegistryClient.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "registry/registry_client.h"
#include "registry/registry_host.h"

namespace roboloop::wiring {

// Where the registry is. Empty `address` = embedded on `root`.
struct RegistryTarget {
  std::string address;            // HOST:PORT or unix:PATH of a remote registry
  std::string root = ".roboloop"; // local store for the embedded registry
  std::string token_file;         // bearer token file for a remote registry
  std::string tls_ca_file;        // PEM roots to trust; set = TLS
  std::string tls_server_name;    // expected name in the server certificate (optional)
  std::string tls_client_cert_file;  // client certificate (admin second factor; optional)
  std::string tls_client_key_file;   // its private key
};

// "the registry at ROOT": how errors name the registry embedded on `root` (users never see its socket).
std::string EmbeddedRegistryName(const std::string& root);

// An open connection; owns the embedded service when there is one.
class RegistryConnection {
 public:
  // Connects to `target` (starting the embedded registry when no address is given). Errors name
  // an embedded registry of `target.root` (also one another process started, e.g. for training
  // ranks) by EmbeddedRegistryName, a remote one by its address.
  static absl::StatusOr<std::unique_ptr<RegistryConnection>> Open(const RegistryTarget& target);

  // The client; valid as long as the connection.
  registry::RegistryClient& client() { return *client_; }

 private:
  RegistryConnection() = default;

  std::unique_ptr<registry::RegistryHost> host_;
  std::unique_ptr<registry::RegistryClient> client_;
};

}  // namespace roboloop::wiring
