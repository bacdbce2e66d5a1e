#include "common/grpc_client.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "common/grpc_address.h"
#include "common/grpc_auth.h"
#include "common/grpc_caller.h"
#include "common/grpc_status.h"
#include "common/grpc_tls.h"
#include "common/status.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace roboloop::common {
namespace {

// gRPC rejects retry policies with more attempts than this (it would clamp silently).
constexpr int kMaxGrpcAttempts = 5;

std::string DurationJson(absl::Duration duration) {
  return absl::StrFormat("%.3fs", absl::ToDoubleSeconds(duration));
}

absl::Status ValidateRetryPolicy(const GrpcRetryPolicy& retry) {
  if (retry.max_attempts < 1 || retry.max_attempts > kMaxGrpcAttempts) {
    return absl::InvalidArgumentError(absl::StrCat("retry.max_attempts must be in 1..",
                                                   kMaxGrpcAttempts, ", got ",
                                                   retry.max_attempts));
  }
  if (retry.initial_backoff <= absl::ZeroDuration() || retry.max_backoff < retry.initial_backoff) {
    return absl::InvalidArgumentError(
        "retry backoffs must satisfy 0 < initial_backoff <= max_backoff");
  }
  if (retry.backoff_multiplier < 1.0) {
    return absl::InvalidArgumentError(absl::StrCat("retry.backoff_multiplier must be >= 1, got ",
                                                   retry.backoff_multiplier));
  }
  return absl::OkStatus();
}

absl::Status ValidateChannelOptions(const GrpcChannelOptions& options) {
  if (options.target.empty()) return absl::InvalidArgumentError("gRPC target is empty");
  // Plain addresses are checked here; URIs such as dns:///host:port are left to gRPC.
  if (!absl::StrContains(options.target, "://")) {
    ROBOLOOP_RETURN_IF_ERROR(ParseListenAddress(options.target).status());
  }
  if (options.default_deadline <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("default_deadline must be positive");
  }
  if (options.max_message_bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_message_bytes must be positive, got ", options.max_message_bytes));
  }
  return ValidateRetryPolicy(options.retry);
}

absl::StatusOr<std::string> ResolveToken(const GrpcChannelOptions& options) {
  if (!options.token.empty()) {
    ROBOLOOP_RETURN_IF_ERROR(ValidateToken(options.token));
    return options.token;
  }
  if (options.token_file.empty()) return std::string();
  return ReadTokenFile(options.token_file);
}

// Checks that a client certificate comes with its key and with TLS.
absl::Status ValidateClientCertificate(const GrpcChannelOptions& options) {
  const bool has_cert = !options.tls_client_cert_file.empty();
  const bool has_key = !options.tls_client_key_file.empty();
  if (!has_cert && !has_key) return absl::OkStatus();
  if (has_cert != has_key) {
    return absl::InvalidArgumentError(
        "a client certificate needs both a certificate file and a key file (tls_client_cert_file and "
        "tls_client_key_file)");
  }
  if (options.tls_root_cert_file.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("client certificate '", options.tls_client_cert_file,
                                                   "' needs TLS: give the server's roots (tls_root_cert_file)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const GrpcChannelOptions& options) {
  ROBOLOOP_RETURN_IF_ERROR(ValidateClientCertificate(options));
  if (options.tls_root_cert_file.empty()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  ROBOLOOP_ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadPemCertificates(options.tls_root_cert_file));
  if (!options.tls_client_cert_file.empty()) {
    ROBOLOOP_ASSIGN_OR_RETURN(TlsKeyPair client,
                              ReadTlsKeyPair(options.tls_client_cert_file, options.tls_client_key_file));
    ssl.pem_cert_chain = std::move(client.cert_chain_pem);
    ssl.pem_private_key = std::move(client.private_key_pem);
  }
  return grpc::SslCredentials(ssl);
}

grpc::ChannelArguments MakeChannelArguments(const GrpcChannelOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetMaxSendMessageSize(options.max_message_bytes);
  // gRPC refuses a retryPolicy with maxAttempts 1, so "no retries" means no policy.
  const bool retries = options.retry.max_attempts > 1;
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, retries ? 1 : 0);
  if (retries) args.SetServiceConfigJSON(RetryServiceConfigJson(options.retry));
  // Reconnect as fast as calls retry, so a retry can find a server that just came up.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(options.retry.initial_backoff)));
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(options.retry.initial_backoff)));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(options.retry.max_backoff)));
  if (!options.tls_server_name.empty()) {
    args.SetSslTargetNameOverride(options.tls_server_name);
  }
  return args;
}

}  // namespace

std::string RetryServiceConfigJson(const GrpcRetryPolicy& policy) {
  return absl::StrCat(
      R"({"methodConfig":[{"name":[{}],"retryPolicy":{"maxAttempts":)", policy.max_attempts,
      R"(,"initialBackoff":")", DurationJson(policy.initial_backoff), R"(","maxBackoff":")",
      DurationJson(policy.max_backoff), R"(","backoffMultiplier":)",
      absl::StrFormat("%g", policy.backoff_multiplier),
      R"(,"retryableStatusCodes":["UNAVAILABLE"]}}]})");
}

absl::StatusOr<std::unique_ptr<GrpcChannel>> GrpcChannel::Create(
    const GrpcChannelOptions& options) {
  const std::string context = absl::StrCat("gRPC channel to '", options.target, "'");
  ROBOLOOP_RETURN_IF_ERROR(Annotate(ValidateChannelOptions(options), context));
  absl::StatusOr<std::string> token = ResolveToken(options);
  ROBOLOOP_RETURN_IF_ERROR(Annotate(token.status(), context));
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      MakeChannelCredentials(options);
  ROBOLOOP_RETURN_IF_ERROR(Annotate(credentials.status(), context));
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(options.target, *credentials, MakeChannelArguments(options));
  if (channel == nullptr) return absl::InternalError(absl::StrCat(context, ": creation failed"));
  return std::unique_ptr<GrpcChannel>(
      new GrpcChannel(options, *std::move(token), std::move(channel)));
}

std::unique_ptr<grpc::ClientContext> GrpcChannel::NewContext() const {
  return NewContext(options_.default_deadline);
}

std::unique_ptr<grpc::ClientContext> GrpcChannel::NewContext(absl::Duration deadline) const {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  if (!token_.empty()) context->AddMetadata(kAuthorizationMetadataKey, BearerMetadataValue(token_));
  AddCallerIdentity(*context);
  return context;
}

const std::string& GrpcChannel::name() const {
  return options_.display_name.empty() ? options_.target : options_.display_name;
}

absl::Status GrpcChannel::CallStatus(const grpc::Status& status, absl::string_view rpc) const {
  absl::Status converted = GrpcToAbsl(status);
  // gRPC's own messages (a failed connect) repeat the target: the display name replaces it there too.
  if (!converted.ok() && !options_.display_name.empty()) {
    converted = absl::Status(converted.code(), absl::StrReplaceAll(converted.message(),
                                                                   {{options_.target, options_.display_name}}));
  }
  return Annotate(converted, absl::StrCat(rpc, " to ", name()));
}

absl::Status GrpcChannel::WaitForConnected(absl::Duration timeout) const {
  if (channel_->WaitForConnected(absl::ToChronoTime(absl::Now() + timeout))) {
    return absl::OkStatus();
  }
  return absl::UnavailableError(absl::StrCat("cannot connect to '", name(),
                                             "' within ", absl::FormatDuration(timeout)));
}

absl::Status GrpcChannel::CheckServing(const std::string& service) const {
  auto stub = grpc::health::v1::Health::NewStub(channel_);
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  std::unique_ptr<grpc::ClientContext> context = NewContext();
  ROBOLOOP_RETURN_IF_ERROR(CallStatus(stub->Check(context.get(), request, &response),
                                      absl::StrCat("health check of '", service, "'")));
  if (response.status() != grpc::health::v1::HealthCheckResponse::SERVING) {
    return absl::UnavailableError(absl::StrCat(
        "service '", service, "' at ", name(), " is ",
        grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status())));
  }
  return absl::OkStatus();
}

CancellationCallback CancelCallOnCancel(grpc::ClientContext* context, const CancellationToken* cancel) {
  if (cancel == nullptr) return CancellationCallback();
  return cancel->OnCancel([context] { context->TryCancel(); });
}

}  // namespace roboloop::common
