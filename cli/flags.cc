#include "cli/flags.h"

#include <cstdio>
#include <google/protobuf/util/json_util.h>
#include <nlohmann/json.hpp>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/grpc_address.h"
#include "common/status.h"
#include "sim/plugin_call_guard.h"
#include "wiring/method_classes.h"
#include "wiring/method_roles.h"

namespace roboloop::cli {

void AddServerFlags(CLI::App* command, ServerFlags* flags, const std::string& default_listen) {
  flags->listen = default_listen;
  command->add_option("--listen", flags->listen, "HOST:PORT or unix:PATH")->capture_default_str();
  command->add_option("--token-file", flags->token_file, "Require this bearer token from clients");
  command->add_option("--tokens-file", flags->tokens_file,
                      "Callers, their token digests and roles (read, write, admin); re-read on SIGHUP")
      ->excludes("--token-file");
  command->add_option("--tls-cert", flags->tls_cert, "PEM certificate chain (with --tls-key)");
  command->add_option("--tls-key", flags->tls_key, "PEM private key");
  command->add_option("--admin-client-ca", flags->admin_client_ca,
                      "PEM roots for admin callers' client certificates: admin calls then also need a certificate "
                      "naming the caller (with --tokens-file and TLS)")
      ->needs("--tokens-file");
  command->add_flag("--insecure", flags->insecure, "Allow plaintext on a non-loopback address (tokens travel in clear)");
  command->add_option("--shutdown-deadline", flags->shutdown_deadline_s, "Seconds in-flight calls get on SIGINT/SIGTERM")
      ->capture_default_str();
  command->add_option("--unary-deadline", flags->unary_deadline_s, "Seconds a unary call may run (0 = no limit)")
      ->capture_default_str();
  command->add_option("--transfer-deadline", flags->transfer_deadline_s,
                      "Seconds an upload or download stream may run (0 = no limit)")
      ->capture_default_str();
  command->add_option("--long-call-deadline", flags->long_call_deadline_s,
                      "Seconds an evaluation, rollout, training, verify or gc call may run (0 = no limit)")
      ->capture_default_str();
  command->add_option("--upload-idle-timeout", flags->upload_idle_timeout_s,
                      "Seconds an upload may wait for the client's next message (0 = no limit)")
      ->capture_default_str();
}

common::GrpcServerOptions ServerOptionsFrom(const ServerFlags& flags) {
  common::GrpcServerOptions options;
  options.listen_address = flags.listen;
  options.token_file = flags.token_file;
  options.tokens_file = flags.tokens_file;
  options.method_roles = wiring::ServiceMethodRoles();
  options.tls_cert_file = flags.tls_cert;
  options.tls_key_file = flags.tls_key;
  options.admin_client_ca_file = flags.admin_client_ca;
  options.insecure = flags.insecure;
  options.shutdown_deadline = absl::Seconds(flags.shutdown_deadline_s);
  options.call_limits.unary_deadline = absl::Seconds(flags.unary_deadline_s);
  options.call_limits.transfer_deadline = absl::Seconds(flags.transfer_deadline_s);
  options.call_limits.long_call_deadline = absl::Seconds(flags.long_call_deadline_s);
  options.call_limits.receive_idle_timeout = absl::Seconds(flags.upload_idle_timeout_s);
  options.method_classes = wiring::ServiceMethodClasses();
  return options;
}

void AddRegistryTargetFlags(CLI::App* command, wiring::RegistryTarget* target) {
  command
      ->add_option("--registry", target->address, "Remote registry HOST:PORT or unix:PATH (default: embedded on --root)")
      ->check(CLI::Validator(
          [](std::string& address) -> std::string {
            if (absl::StrContains(address, "://")) return "";  // a gRPC URI (dns:///host:port), checked by gRPC
            const absl::Status status = common::ParseListenAddress(address).status();
            // The parser is the servers' too and says "listen address"; this one is the registry's.
            return status.ok() ? "" : std::string(absl::StripPrefix(status.message(), "listen "));
          },
          "ADDRESS"));
  command->add_option("--root", target->root, "Local store: embedded registry, leaderboard, runs")->capture_default_str();
  command->add_option("--registry-token-file", target->token_file, "Bearer token file for --registry");
  command->add_option("--registry-tls-ca", target->tls_ca_file, "PEM roots to trust for --registry; turns on TLS");
  command->add_option("--registry-tls-server-name", target->tls_server_name,
                      "Name expected in the registry's certificate");
  command->add_option("--registry-tls-client-cert", target->tls_client_cert_file,
                      "PEM client certificate for --registry (the admin second factor; with --registry-tls-client-key)");
  command->add_option("--registry-tls-client-key", target->tls_client_key_file,
                      "PEM private key of --registry-tls-client-cert");
}

void AddPluginCallTimeoutFlag(CLI::App* command) {
  command->add_option_function<double>(
      kPluginCallTimeoutFlag,
      [](const double& seconds) {
        const absl::Status status = sim::SetPluginCallTimeout(seconds, kPluginCallTimeoutFlag);
        if (status.ok()) return;
        throw CLI::ValidationError(std::string(status.message()), CLI::ExitCodes::ValidationError);
      },
      absl::StrCat("Seconds one call into a task plug-in may take before the process ends (0 = no limit; "
                   "default: $", sim::kPluginCallTimeoutVariable, ", else 60)"));
}

namespace {

// Sets, in `json` (`message` as protobuf prints it with the proto field names), each fixed64 field to its
// StateHashHex; true when there was one. Well-known types (google.protobuf.Struct, ...), whose JSON is not
// field by field, and maps are left as they are: none holds a hash.
bool WithHexHashes(const google::protobuf::Message& message, nlohmann::ordered_json& json) {
  using google::protobuf::FieldDescriptor;
  if (absl::StartsWith(message.GetDescriptor()->file()->name(), "google/protobuf/")) return false;
  const google::protobuf::Reflection& reflection = *message.GetReflection();
  const google::protobuf::Descriptor& descriptor = *message.GetDescriptor();
  bool changed = false;
  for (int index = 0; index < descriptor.field_count(); ++index) {  // a zero hash is printed too with kPrinted
    const FieldDescriptor* field = descriptor.field(index);
    if (field->is_map() || !json.contains(field->name())) continue;
    nlohmann::ordered_json& value = json[field->name()];
    const int count = field->is_repeated() ? reflection.FieldSize(message, field) : 1;
    for (int i = 0; i < count; ++i) {
      nlohmann::ordered_json& element = field->is_repeated() ? value[i] : value;
      if (field->type() == FieldDescriptor::TYPE_FIXED64) {
        element = StateHashHex(field->is_repeated() ? reflection.GetRepeatedUInt64(message, field, i)
                                                    : reflection.GetUInt64(message, field));
        changed = true;
      } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        changed |= WithHexHashes(field->is_repeated() ? reflection.GetRepeatedMessage(message, field, i)
                                                      : reflection.GetMessage(message, field),
                                 element);
      }
    }
  }
  return changed;
}

}  // namespace

std::string StateHashHex(uint64_t hash) { return absl::StrFormat("%016x", hash); }

absl::StatusOr<std::string> ProtoJson(const google::protobuf::Message& message, JsonLayout layout,
                                      JsonDefaults defaults) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = layout == JsonLayout::kIndented;
  options.always_print_primitive_fields = defaults == JsonDefaults::kPrinted;
  options.preserve_proto_field_names = true;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(message, &json, options).ok()) {
    return absl::InternalError(absl::StrCat("cannot print a ", message.GetDescriptor()->full_name(), " as JSON"));
  }
  nlohmann::ordered_json parsed = nlohmann::ordered_json::parse(json);
  if (!WithHexHashes(message, parsed)) return json;
  // Indented as protobuf indents: one space per level.
  return layout == JsonLayout::kIndented ? parsed.dump(1) : parsed.dump();
}

absl::Status PrintProtoJson(const google::protobuf::Message& message, JsonLayout layout, JsonDefaults defaults) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::string json, ProtoJson(message, layout, defaults));
  std::printf("%s\n", json.c_str());
  return absl::OkStatus();
}

}  // namespace roboloop::cli
