#include "pipeline/registry_connection.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "common/fs.h"
#include "common/status.h"

namespace roboloop::cli {

void AddRegistryTargetOptions(CLI::App* command, RegistryTarget* target) {
  command->add_option("--registry", target->address,
                      "Remote registry HOST:PORT or unix:PATH (default: embedded on --root)");
  command->add_option("--root", target->root, "Local store of the embedded registry")
      ->capture_default_str();
  command->add_option("--token-file", target->token_file, "Bearer token file for --registry");
  command->add_option("--tls-ca", target->tls_ca_file, "PEM roots to trust; turns on TLS");
  command->add_option("--tls-server-name", target->tls_server_name,
                      "Name expected in the server certificate");
}

absl::StatusOr<std::unique_ptr<RegistryConnection>> RegistryConnection::Open(
    const RegistryTarget& target) {
  std::unique_ptr<RegistryConnection> connection(new RegistryConnection());
  common::GrpcChannelOptions channel;
  channel.target = target.address;
  channel.token_file = target.token_file;
  channel.tls_root_cert_file = target.tls_ca_file;
  channel.tls_server_name = target.tls_server_name;
  if (target.address.empty()) {
    // Embedded: an in-process registry on a unix socket private to this process.
    registry::RegistryHost::Options host;
    host.registry.root = target.root;
    host.server.listen_address =
        absl::StrCat("unix:", JoinPath(target.root, absl::StrCat("run/registry-", getpid(), ".sock")));
    ROBOLOOP_ASSIGN_OR_RETURN(connection->host_, registry::RegistryHost::Create(host));
    channel.target = connection->host_->target();
  }
  ROBOLOOP_ASSIGN_OR_RETURN(connection->client_, registry::RegistryClient::Connect(channel));
  return connection;
}

}  // namespace roboloop::cli
