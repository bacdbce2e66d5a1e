#include "wiring/registry_connection.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "common/fs.h"
#include "common/status.h"
#include "common/store_layout.h"

namespace roboloop::wiring {

std::string EmbeddedRegistryName(const std::string& root) { return absl::StrCat("the registry at ", root); }

absl::StatusOr<std::unique_ptr<RegistryConnection>> RegistryConnection::Open(
    const RegistryTarget& target) {
  std::unique_ptr<RegistryConnection> connection(new RegistryConnection());
  common::GrpcChannelOptions channel;
  channel.target = target.address;
  channel.token_file = target.token_file;
  channel.tls_root_cert_file = target.tls_ca_file;
  channel.tls_server_name = target.tls_server_name;
  channel.tls_client_cert_file = target.tls_client_cert_file;
  channel.tls_client_key_file = target.tls_client_key_file;
  if (target.address.empty()) {
    // Embedded: an in-process registry on a unix socket private to this process.
    registry::RegistryHost::Options host;
    host.registry.root = target.root;
    host.server.listen_address = StoreLayout(target.root).EmbeddedSocket("registry");
    ROBOLOOP_ASSIGN_OR_RETURN(connection->host_, registry::RegistryHost::Create(host));
    channel.target = connection->host_->target();
  }
  if (StoreLayout(target.root).IsEmbeddedAddress(channel.target)) {
    channel.display_name = EmbeddedRegistryName(target.root);
  }
  ROBOLOOP_ASSIGN_OR_RETURN(connection->client_, registry::RegistryClient::Connect(channel));
  return connection;
}

}  // namespace roboloop::wiring
