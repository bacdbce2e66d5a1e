// Flag groups every command shares (issue 27, req 3), so a flag means the same thing wherever it
// appears: the server flags of every `serve` command, the registry-target flags of every command
// that reaches a registry, and JSON printing of proto messages.
//
//   --token-file F            the bearer token THIS server requires (serve commands only)
//   --registry-token-file F   the token sent to --registry; likewise --registry-tls-ca, --registry-tls-server-name,
//                             --registry-tls-client-cert/-key
//   --sim-token-file F        the token sent to --sim
#pragma once

#include <CLI/CLI.hpp>
#include <google/protobuf/message.h>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "common/grpc_server.h"
#include "wiring/registry_connection.h"

namespace roboloop::cli {

// What every `serve` command takes.
struct ServerFlags {
  std::string listen;               // HOST:PORT or unix:PATH (each command sets its default)
  std::string token_file;           // bearer token clients must send; empty = none
  std::string tokens_file;          // callers with roles (common/access_roles.h); excludes token_file
  std::string tls_cert;             // PEM chain; with tls_key turns on TLS
  std::string tls_key;              // PEM private key
  std::string admin_client_ca;      // PEM roots of admin callers' client certificates (second factor)
  bool insecure = false;            // allow plaintext on a non-loopback address
  double shutdown_deadline_s = 10;  // seconds in-flight calls get on SIGINT/SIGTERM
  // Server-side deadlines in seconds (common/grpc_call_limits.h); 0 = no limit.
  double unary_deadline_s = 600;            // unary calls
  double transfer_deadline_s = 6 * 3600;    // streaming uploads and downloads
  double long_call_deadline_s = 7 * 86400;  // evaluations, rollouts, training, verify, gc
  double upload_idle_timeout_s = 120;       // wait for an upload's next message
};

// Adds --listen (default `default_listen`), --token-file, --tokens-file, --tls-cert, --tls-key,
// --admin-client-ca, --insecure, --shutdown-deadline, --unary-deadline, --transfer-deadline,
// --long-call-deadline and --upload-idle-timeout to `command`.
void AddServerFlags(CLI::App* command, ServerFlags* flags, const std::string& default_listen);

// The server options `flags` describe.
common::GrpcServerOptions ServerOptionsFrom(const ServerFlags& flags);

// Adds --registry, --root, --registry-token-file, --registry-tls-ca, --registry-tls-server-name,
// --registry-tls-client-cert and --registry-tls-client-key to `command`.
void AddRegistryTargetFlags(CLI::App* command, wiring::RegistryTarget* target);

// The flag of AddPluginCallTimeoutFlag.
inline constexpr char kPluginCallTimeoutFlag[] = "--plugin-call-timeout";

// Adds --plugin-call-timeout SECONDS to `command`, one that takes --task-plugin: the time limit of
// one call into a task plug-in this process loads, over $ROBOLOOP_PLUGIN_CALL_TIMEOUT_S
// (sim::SetPluginCallTimeout; a value that is not a number of seconds >= 0 is a usage error).
void AddPluginCallTimeoutFlag(CLI::App* command);

// How JSON output is laid out: indented for one document, one line per message for streams (JSONL).
enum class JsonLayout { kIndented, kOneLine };

// Whether JSON output prints fields holding their default (0, false, "", an empty list) or, as protobuf
// does by default, leaves them out. Tables of results print them, so that a 0 % success rate or an empty
// leaderboard reads as a value ("rate": 0, "evaluations": []) rather than a missing key.
enum class JsonDefaults { kOmitted, kPrinted };

// A state hash (the proto's fixed64 fields) as tables and JSON show it and `sim replay --expect-hash`
// takes it: 16 hex digits.
std::string StateHashHex(uint64_t hash);

// `message` as JSON with the proto field names, its fixed64 fields (state hashes, in sim's and eval's
// episodes) as StateHashHex strings where protobuf would print decimal ones; InternalError naming its
// type if it cannot be printed (e.g. a string that is not UTF-8).
absl::StatusOr<std::string> ProtoJson(const google::protobuf::Message& message,
                                      JsonLayout layout = JsonLayout::kIndented,
                                      JsonDefaults defaults = JsonDefaults::kOmitted);

// Prints ProtoJson(message, layout, defaults) and a newline to stdout.
absl::Status PrintProtoJson(const google::protobuf::Message& message, JsonLayout layout = JsonLayout::kIndented,
                            JsonDefaults defaults = JsonDefaults::kOmitted);

}  // namespace roboloop::cli
