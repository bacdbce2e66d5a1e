#include "cli/serve.h"

#include <cstdio>
#include <memory>

#include "cli/eval_run.h"
#include "cli/flags.h"
#include "common/grpc_auth.h"
#include "common/grpc_signals.h"
#include "common/status.h"
#include "registry/registry_host.h"
#include "wiring/serve.h"

namespace roboloop::cli {
namespace {

// Flags of `serve registry`.
struct ServeRegistryFlags {
  ServerFlags server;
  std::string root = ".roboloop";
};

absl::Status ServeRegistry(const ServeRegistryFlags& flags) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto signals, common::ShutdownSignals::Create());
  registry::RegistryHost::Options options;
  options.registry.root = flags.root;
  options.server = ServerOptionsFrom(flags.server);
  ROBOLOOP_ASSIGN_OR_RETURN(auto host, registry::RegistryHost::Create(options));
  wiring::ServeUntilShutdown(host->server(), *signals, "registry", " " + flags.root);
  return absl::OkStatus();
}

absl::Status MakeToken(const std::string& path) {
  ROBOLOOP_RETURN_IF_ERROR(common::WriteNewTokenFile(path));
  std::printf("wrote a new bearer token to %s (mode 0600); serve with --token-file %s, "
              "call with --registry-token-file (or --sim-token-file, ...) %s\n",
              path.c_str(), path.c_str(), path.c_str());
  return absl::OkStatus();
}

}  // namespace

CLI::App* AddServeCommands(CLI::App& app, CommandRunner& runner) {
  auto flags = std::make_shared<ServeRegistryFlags>();
  CLI::App* serve = app.add_subcommand("serve", "Run a roboloop service");
  serve->require_subcommand(1);
  CLI::App* registry = serve->add_subcommand("registry", "Run RegistryService");
  AddServerFlags(registry, &flags->server, "127.0.0.1:7070");
  registry->add_option("--root", flags->root, "Registry store folder")->capture_default_str();
  runner.Bind(registry, [flags] { return ServeRegistry(*flags); });
  AddServeEvalCommand(serve, runner);
  auto token_file = std::make_shared<std::string>();
  CLI::App* token = serve->add_subcommand("token", "Write a new random bearer token file (mode 0600) for --token-file");
  token->add_option("-o,--output", *token_file, "Token file to create (never replaces one)")->required();
  runner.Bind(token, [token_file] { return MakeToken(*token_file); });
  return serve;
}

}  // namespace roboloop::cli
