// The client side matching GrpcServer: a channel to one target with the bearer token, TLS,
// default deadlines, retries of UNAVAILABLE with exponential backoff, and status conversion
// that names the target.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/cancellation.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/status.h"

namespace roboloop::common {

// How calls that fail with UNAVAILABLE are retried (gRPC's service-config retryPolicy).
struct GrpcRetryPolicy {
  // Total attempts per call including the first (gRPC caps this at 5); 1 = no retries.
  int max_attempts = 5;
  // Backoff before the first retry; later ones grow by backoff_multiplier (with jitter).
  absl::Duration initial_backoff = absl::Milliseconds(100);
  // Upper bound on one backoff.
  absl::Duration max_backoff = absl::Seconds(2);
  // Growth factor of the backoff between retries.
  double backoff_multiplier = 2.0;
};

// How to reach a GrpcServer.
struct GrpcChannelOptions {
  // HOST:PORT, [IPV6]:PORT or unix:PATH, as GrpcServer::target() prints it.
  std::string target;
  // How errors name the server for the user, e.g. "the registry at .roboloop" for a server this
  // program started on a private unix socket (also where gRPC's own message repeats the target);
  // empty = the target.
  std::string display_name;
  // Bearer token sent with every call; wins over token_file. Empty with no file = none.
  std::string token;
  // File holding the bearer token (used when token is empty).
  std::string token_file;
  // PEM trust roots (e.g. the server's self-signed certificate); non-empty turns on TLS.
  std::string tls_root_cert_file;
  // Name to verify the server's certificate against instead of the target's host.
  std::string tls_server_name;
  // With TLS: a client certificate (PEM chain) and its key, presented to the server, e.g. as the
  // second factor of admin callers (GrpcServerOptions::admin_client_ca_file). Set both or none.
  std::string tls_client_cert_file;
  std::string tls_client_key_file;
  // Deadline of calls made with NewContext().
  absl::Duration default_deadline = absl::Seconds(30);
  // Retries of UNAVAILABLE.
  GrpcRetryPolicy retry;
  // Largest message the client sends or accepts, in bytes.
  int max_message_bytes = 64 << 20;
};

// A channel plus per-call settings. Thread-safe: all methods are const and may be called
// concurrently; contexts are per call and must not be shared.
class GrpcChannel {
 public:
  // Validates `options` (target syntax, token, TLS root file, retry numbers) and creates a
  // lazily connecting channel; errors name the option and the target.
  static absl::StatusOr<std::unique_ptr<GrpcChannel>> Create(const GrpcChannelOptions& options);

  // The channel, for generated stubs (`Service::NewStub(channel->channel())`).
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  // The target this channel dials.
  const std::string& target() const { return options_.target; }

  // A context for one call with the default deadline, the bearer token and the caller's
  // identity (common/grpc_caller.h).
  std::unique_ptr<grpc::ClientContext> NewContext() const;
  // A context for one call with `deadline` from now, the bearer token and the caller's identity.
  std::unique_ptr<grpc::ClientContext> NewContext(absl::Duration deadline) const;

  // How errors name the server: the display name, else the target.
  const std::string& name() const;

  // Converts a finished call's status, prefixing `rpc` and the server's name() to the message
  // (in which the display name, when set, replaces the target), e.g. "Upload to
  // 127.0.0.1:5000: connection refused". OK stays OK.
  absl::Status CallStatus(const grpc::Status& status, absl::string_view rpc) const;

  // Waits until the channel is connected, up to `timeout`; UNAVAILABLE naming the server if not.
  absl::Status WaitForConnected(absl::Duration timeout) const;

  // Asks the server's grpc.health.v1 service about `service` ("" = the whole server): OK if
  // SERVING, UNAVAILABLE naming the server if NOT_SERVING or unreachable, NOT_FOUND if unknown.
  absl::Status CheckServing(const std::string& service) const;

 private:
  GrpcChannel(GrpcChannelOptions options, std::string token,
              std::shared_ptr<grpc::Channel> channel)
      : options_(std::move(options)), token_(std::move(token)), channel_(std::move(channel)) {}

  const GrpcChannelOptions options_;
  const std::string token_;
  const std::shared_ptr<grpc::Channel> channel_;
};

// The service-config JSON that makes gRPC retry UNAVAILABLE for every method per `policy`
// (policy.max_attempts >= 2; with 1 the channel is created without a retry policy).
std::string RetryServiceConfigJson(const GrpcRetryPolicy& policy);

// Cancels a call's context (TryCancel) when `cancel` is cancelled while the returned
// registration lives (at once when it already is); a null `cancel` watches nothing. Used for
// blocking unary calls that a pipeline stops.
[[nodiscard]] CancellationCallback CancelCallOnCancel(grpc::ClientContext* context, const CancellationToken* cancel);

}  // namespace roboloop::common
