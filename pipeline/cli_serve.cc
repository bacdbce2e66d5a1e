#include "pipeline/cli_serve.h"

#include <cstdio>
#include <memory>

#include <spdlog/spdlog.h>

#include "common/grpc_signals.h"
#include "common/status.h"
#include "pipeline/cli_eval_run.h"
#include "registry/registry_host.h"

namespace roboloop::cli {
namespace {

// Flags shared by every `serve` subcommand.
struct ServeFlags {
  std::string listen = "127.0.0.1:7070";
  std::string root = ".roboloop";
  std::string token_file;
  std::string tls_cert;
  std::string tls_key;
  bool insecure = false;
  double shutdown_deadline_s = 10;
};

void AddServerOptions(CLI::App* command, ServeFlags* flags) {
  command->add_option("--listen", flags->listen, "HOST:PORT or unix:PATH")->capture_default_str();
  command->add_option("--token-file", flags->token_file, "Require this bearer token");
  command->add_option("--tls-cert", flags->tls_cert, "PEM certificate chain (with --tls-key)");
  command->add_option("--tls-key", flags->tls_key, "PEM private key");
  command->add_flag("--insecure", flags->insecure,
                    "Allow plaintext on a non-loopback address (tokens travel in clear)");
  command->add_option("--shutdown-deadline", flags->shutdown_deadline_s,
                      "Seconds in-flight calls get on SIGINT/SIGTERM")
      ->capture_default_str();
}

common::GrpcServerOptions ServerOptions(const ServeFlags& flags) {
  common::GrpcServerOptions options;
  options.listen_address = flags.listen;
  options.token_file = flags.token_file;
  options.tls_cert_file = flags.tls_cert;
  options.tls_key_file = flags.tls_key;
  options.insecure = flags.insecure;
  options.shutdown_deadline = absl::Seconds(flags.shutdown_deadline_s);
  return options;
}

absl::Status ServeRegistry(const ServeFlags& flags) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto signals, common::ShutdownSignals::Create());
  registry::RegistryHost::Options options;
  options.registry.root = flags.root;
  options.server = ServerOptions(flags);
  ROBOLOOP_ASSIGN_OR_RETURN(auto host, registry::RegistryHost::Create(options));
  std::printf("registry serving %s on %s\n", flags.root.c_str(), host->target().c_str());
  std::fflush(stdout);
  int signal_number = common::ServeUntilShutdownSignal(host->server(), *signals);
  spdlog::info("registry stopped after signal {}", signal_number);
  return absl::OkStatus();
}

}  // namespace

CLI::App* AddServeCommands(CLI::App& app, CommandRunner& runner) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* serve = app.add_subcommand("serve", "Run a roboloop service");
  serve->require_subcommand(1);
  CLI::App* registry = serve->add_subcommand("registry", "Run RegistryService");
  AddServerOptions(registry, flags.get());
  registry->add_option("--root", flags->root, "Registry store folder")->capture_default_str();
  runner.Bind(registry, [flags] { return ServeRegistry(*flags); });
  AddServeEvalCommand(serve, runner);
  return serve;
}

}  // namespace roboloop::cli
