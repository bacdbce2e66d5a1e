#include "common/grpc_server.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/grpc_address.h"
#include "common/grpc_auth.h"
#include "common/grpc_server_credentials.h"
#include "common/grpc_tls.h"
#include "common/status.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/impl/server_builder_option.h"
#include "grpcpp/impl/server_builder_plugin.h"
#include "grpcpp/impl/server_initializer.h"
#include "grpcpp/server_builder.h"

namespace roboloop::common {
namespace {

using ServiceNames = std::vector<std::string>;

// Copies the server's service list once the server has started (the list is only exposed to
// builder plugins), so health can be set per service without callers naming them.
class ServiceListPlugin final : public grpc::ServerBuilderPlugin {
 public:
  explicit ServiceListPlugin(std::shared_ptr<ServiceNames> names) : names_(std::move(names)) {}
  std::string name() override { return "roboloop_service_list"; }
  void InitServer(grpc::ServerInitializer* /*si*/) override {}
  void Finish(grpc::ServerInitializer* si) override { *names_ = *si->GetServiceList(); }
  void ChangeArguments(const std::string& /*name*/, void* /*value*/) override {}

 private:
  std::shared_ptr<ServiceNames> names_;
};

class ServiceListOption final : public grpc::ServerBuilderOption {
 public:
  explicit ServiceListOption(std::shared_ptr<ServiceNames> names) : names_(std::move(names)) {}
  void UpdateArguments(grpc::ChannelArguments* /*args*/) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    plugins->push_back(std::make_unique<ServiceListPlugin>(names_));
  }

 private:
  std::shared_ptr<ServiceNames> names_;
};

// Turns on the process-wide gRPC features every roboloop server uses (idempotent).
void EnableProcessWideServerFeatures() {
  static const bool enabled = [] {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
    return true;
  }();
  (void)enabled;
}

// The listener's TLS key pair, or none for plaintext (refused off loopback unless `insecure`).
absl::StatusOr<std::optional<TlsKeyPair>> ReadListenerTls(const GrpcServerOptions& options,
                                                          const ListenAddress& address) {
  const bool has_cert = !options.tls_cert_file.empty();
  const bool has_key = !options.tls_key_file.empty();
  if (has_cert != has_key) {
    return absl::InvalidArgumentError(
        "TLS needs both a certificate file and a key file (tls_cert_file and tls_key_file)");
  }
  if (!has_cert) {
    if (!address.IsLoopback() && !options.insecure) {
      return absl::FailedPreconditionError(absl::StrCat(
          "refusing a plaintext listener on non-loopback address '", options.listen_address,
          "': bearer tokens would travel in clear; give a TLS certificate and key, or pass "
          "--insecure"));
    }
    return std::nullopt;
  }
  return ReadTlsKeyPair(options.tls_cert_file, options.tls_key_file);
}

// The PEM roots admin callers' client certificates must verify against ("" when admin needs no
// certificate). A second factor on top of a tokens file, over TLS only.
absl::StatusOr<std::string> ReadAdminClientCa(const GrpcServerOptions& options) {
  if (options.admin_client_ca_file.empty()) return std::string();
  if (options.tokens_file.empty() || options.tls_cert_file.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "an admin client CA ('", options.admin_client_ca_file,
        "') is a second factor for admin callers: it needs a tokens file and TLS (a certificate and key)"));
  }
  return ReadPemCertificates(options.admin_client_ca_file);
}

// The verifier the options ask for: none, one token, or a tokens file with method roles.
absl::StatusOr<std::shared_ptr<CallVerifier>> MakeVerifier(const GrpcServerOptions& options) {
  if (!options.token_file.empty() && !options.tokens_file.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "give either a token file ('", options.token_file, "') or a tokens file ('",
        options.tokens_file, "'), not both"));
  }
  if (!options.tokens_file.empty()) {
    return CallVerifier::ForTokensFile(options.tokens_file, options.method_roles,
                                       !options.admin_client_ca_file.empty());
  }
  if (options.token_file.empty()) return std::shared_ptr<CallVerifier>();
  ROBOLOOP_ASSIGN_OR_RETURN(std::string token, ReadTokenFile(options.token_file));
  return std::shared_ptr<CallVerifier>(CallVerifier::ForToken(token));
}

// The address clients should dial for a server bound to `address` on `port`.
std::string DialTarget(const ListenAddress& address, int port) {
  if (address.kind == ListenAddress::Kind::kUnix) return address.ToGrpcAddress();
  ListenAddress dial = address;
  dial.port = port;
  if (dial.host.empty() || dial.host == "0.0.0.0") dial.host = "127.0.0.1";
  if (dial.host == "::") dial.host = "::1";
  return dial.ToGrpcAddress();
}

absl::Status ValidateOptions(const GrpcServerOptions& options) {
  if (options.max_message_bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_message_bytes must be positive, got ", options.max_message_bytes));
  }
  if (options.idle_handler_threads < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "idle_handler_threads must be at least 1, got ", options.idle_handler_threads));
  }
  ROBOLOOP_RETURN_IF_ERROR(ValidateCallLimits(options.call_limits));
  if (options.shutdown_deadline < absl::ZeroDuration() ||
      options.drain_period < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("shutdown_deadline and drain_period must not be negative");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<GrpcServer>> GrpcServer::Create(
    const GrpcServerOptions& options, const std::vector<grpc::Service*>& services) {
  ROBOLOOP_RETURN_IF_ERROR(ValidateOptions(options));
  ROBOLOOP_ASSIGN_OR_RETURN(ListenAddress address, ParseListenAddress(options.listen_address));
  ROBOLOOP_ASSIGN_OR_RETURN(std::optional<TlsKeyPair> tls, ReadListenerTls(options, address));
  ROBOLOOP_ASSIGN_OR_RETURN(std::string admin_client_ca, ReadAdminClientCa(options));
  ROBOLOOP_ASSIGN_OR_RETURN(std::shared_ptr<CallVerifier> verifier, MakeVerifier(options));
  if (address.kind == ListenAddress::Kind::kUnix) {
    ROBOLOOP_RETURN_IF_ERROR(PrepareUnixSocketPath(address.socket_path));
  }
  EnableProcessWideServerFeatures();

  grpc::ServerBuilder builder;
  int bound_port = 0;
  builder.AddListeningPort(address.ToGrpcAddress(), MakeAuthenticatingServerCredentials(tls, admin_client_ca, verifier),
                           &bound_port);
  // Without this, gRPC's SO_REUSEPORT lets a second server silently share a busy port.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(MakeCallerInterceptorFactory(verifier));
  interceptors.push_back(MakeCallLimitInterceptorFactory(options.call_limits, options.method_classes));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS,
                              options.idle_handler_threads);
  for (grpc::Service* service : services) builder.RegisterService(service);
  auto names = std::make_shared<ServiceNames>();
  builder.SetOption(std::make_unique<ServiceListOption>(names));

  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || bound_port == 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on '", options.listen_address,
        "' (address in use, not local, or not permitted; see gRPC's log above)"));
  }
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  ROBOLOOP_CHECK_MSG(health != nullptr, "default health check service is not enabled");
  health->SetServingStatus(true);
  for (const std::string& name : *names) health->SetServingStatus(name, true);
  ListenAddress bound = address;
  bound.port = address.kind == ListenAddress::Kind::kTcp ? bound_port : 0;
  return std::unique_ptr<GrpcServer>(
      new GrpcServer(options, std::move(server), bound.port, bound, *names, std::move(verifier)));
}

GrpcServer::GrpcServer(const GrpcServerOptions& options, std::unique_ptr<grpc::Server> server,
                       int port, const ListenAddress& bound, std::vector<std::string> service_names,
                       std::shared_ptr<CallVerifier> verifier)
    : options_(options),
      verifier_(std::move(verifier)),
      server_(std::move(server)),
      port_(port),
      target_(DialTarget(bound, port)),
      listen_address_(bound.ToGrpcAddress()),
      loopback_only_(bound.IsLoopback()),
      service_names_(std::move(service_names)) {}

GrpcServer::~GrpcServer() { Shutdown(); }

void GrpcServer::SetServingStatus(const std::string& service, bool serving) {
  absl::MutexLock lock(&mu_);
  if (shut_down_) return;
  server_->GetHealthCheckService()->SetServingStatus(service, serving);
}

void GrpcServer::Shutdown() { Shutdown(options_.shutdown_deadline); }

void GrpcServer::Shutdown(absl::Duration deadline) {
  absl::MutexLock lock(&mu_);
  if (shut_down_) return;
  shut_down_ = true;
  // Health first, so watchers and probes see NOT_SERVING while calls still drain.
  server_->GetHealthCheckService()->Shutdown();
  absl::SleepFor(options_.drain_period);
  server_->Shutdown(absl::ToChronoTime(absl::Now() + deadline));
}

void GrpcServer::Wait() { server_->Wait(); }

absl::Status GrpcServer::ReloadTokensFile() {
  if (verifier_ == nullptr) {
    return absl::FailedPreconditionError("this server authenticates no caller: no tokens file");
  }
  return verifier_->ReloadTokensFile();
}

}  // namespace roboloop::common
