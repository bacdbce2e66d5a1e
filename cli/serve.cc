#include "cli/serve.h"

#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "cli/cli.h"
#include "cli/eval_run.h"
#include "cli/flags.h"
#include "common/access_roles.h"
#include "common/grpc_auth.h"
#include "common/grpc_signals.h"
#include "common/sha256.h"
#include "common/status.h"
#include "registry/registry_host.h"
#include "wiring/serve.h"

namespace roboloop::cli {
namespace {

// Flags of `serve registry`.
struct ServeRegistryFlags {
  ServerFlags server;
  std::string root = ".roboloop";
  int64_t max_upload_bytes = 0;  // largest blob one upload may declare; 0 = no limit
  int64_t storage_quota = 0;     // bytes of blobs each caller may store; 0 = no quota
};

absl::Status ServeRegistry(const ServeRegistryFlags& flags) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto signals, common::ShutdownSignals::Create());
  registry::RegistryHost::Options options;
  options.registry.root = flags.root;
  options.server = ServerOptionsFrom(flags.server);
  options.service.max_upload_bytes = flags.max_upload_bytes;
  options.service.caller_quota_bytes = flags.storage_quota;
  ROBOLOOP_ASSIGN_OR_RETURN(auto host, registry::RegistryHost::Create(options));
  wiring::ServeUntilShutdown(host->server(), *signals, "registry", " " + flags.root);
  return absl::OkStatus();
}

// Flags of `serve token`.
struct TokenFlags {
  std::string output;  // token file to create
  std::string name;    // with role: the caller's name in a tokens file
  std::string role;    // with name: read, write or admin
};

absl::Status MakeToken(const TokenFlags& flags) {
  if (flags.name.empty() != flags.role.empty()) {
    return UsageError("give --name and --role together (a tokens-file entry needs both)");
  }
  if (!flags.role.empty()) {
    absl::Status role = common::ParseRole(flags.role).status();
    if (!role.ok()) return UsageError(absl::StrCat("--role: ", role.message()));
  }
  ROBOLOOP_RETURN_IF_ERROR(common::WriteNewTokenFile(flags.output));
  const char* path = flags.output.c_str();
  if (flags.name.empty()) {
    std::printf("wrote a new bearer token to %s (mode 0600); serve with --token-file %s, "
                "call with --registry-token-file (or --sim-token-file, ...) %s\n",
                path, path, path);
    return absl::OkStatus();
  }
  ROBOLOOP_ASSIGN_OR_RETURN(std::string token, common::ReadTokenFile(flags.output));
  std::printf("wrote a new bearer token to %s (mode 0600) for caller '%s'; add this entry to the "
              "server's --tokens-file and send SIGHUP:\n  - {name: %s, sha256: %s, role: %s}\n",
              path, flags.name.c_str(), flags.name.c_str(), Sha256Hex(token).c_str(),
              flags.role.c_str());
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
  registry->add_option("--max-upload-bytes", flags->max_upload_bytes,
                       "Largest blob one upload may send, e.g. 8GiB (0 = no limit)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  registry->add_option("--storage-quota", flags->storage_quota,
                       "Bytes of blobs each caller (tokens-file name) may store, e.g. 100GiB (0 = no quota)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  runner.Bind(registry, [flags] { return ServeRegistry(*flags); });
  AddServeEvalCommand(serve, runner);
  auto token_flags = std::make_shared<TokenFlags>();
  CLI::App* token = serve->add_subcommand(
      "token", "Write a new random bearer token file (mode 0600) for --token-file or a --tokens-file entry");
  token->add_option("-o,--output", token_flags->output, "Token file to create (never replaces one)")->required();
  token->add_option("--name", token_flags->name, "Caller name: also print its --tokens-file entry (with --role)");
  token->add_option("--role", token_flags->role, "read, write or admin (with --name)");
  runner.Bind(token, [token_flags] { return MakeToken(*token_flags); });
  return serve;
}

}  // namespace roboloop::cli
