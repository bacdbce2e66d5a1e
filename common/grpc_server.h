// The gRPC server every roboloop service runs in (docs/architecture.md §3): binds loopback by default
// (TCP or unix socket), serves grpc.health.v1 and reflection, refuses calls without the bearer
// token before any handler runs (common/grpc_server_credentials.h), optionally speaks TLS,
// refuses a plaintext non-loopback listener unless told `insecure`, cancels calls that run past
// their server-side deadline (common/grpc_call_limits.h), and shuts down gracefully.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/access_roles.h"
#include "common/grpc_address.h"
#include "common/grpc_call_limits.h"
#include "common/grpc_auth.h"
#include "grpcpp/server.h"
#include "grpcpp/impl/service_type.h"

namespace roboloop::common {

// How to run a GrpcServer.
struct GrpcServerOptions {
  // HOST:PORT, [IPV6]:PORT, unix:/abs/path or unix:relative/path; port 0 picks a free port.
  std::string listen_address = "127.0.0.1:0";
  // File holding the bearer token clients must send; empty = no authentication.
  std::string token_file;
  // Tokens file of callers and their roles (common/access_roles.h); excludes token_file.
  std::string tokens_file;
  // With tokens_file: the role each method needs; a method not listed needs admin.
  MethodRoles method_roles;
  // Server-side deadlines of calls and the idle timeout of received streams.
  CallLimits call_limits;
  // The deadline class of methods that are not unary or transfer calls.
  MethodClasses method_classes;
  // PEM certificate chain for TLS; set together with tls_key_file, empty = plaintext.
  std::string tls_cert_file;
  // PEM private key matching tls_cert_file.
  std::string tls_key_file;
  // PEM roots for admin callers' client certificates: with a tokens file and TLS, a method that
  // needs admin also needs a client certificate, verified against these roots, whose common
  // name is the caller's name (a second factor). Empty = the token alone.
  std::string admin_client_ca_file;
  // Allow a plaintext listener on a non-loopback address (tokens would travel in clear).
  bool insecure = false;
  // Time in-flight calls get to finish in Shutdown() before they are cancelled.
  absl::Duration shutdown_deadline = absl::Seconds(10);
  // Time between health turning NOT_SERVING and the listener closing, so probes notice.
  absl::Duration drain_period = absl::ZeroDuration();
  // Largest message the server sends or accepts, in bytes.
  int max_message_bytes = 64 << 20;
  // Handler threads kept waiting for calls between calls. gRPC's default (2) makes a server
  // under a few concurrent clients end and start a thread for about every other call.
  int idle_handler_threads = 16;
};

// A started gRPC server. Thread-safe: Shutdown, Wait and SetServingStatus may be called from
// any thread, concurrently; Shutdown acts once.
class GrpcServer {
 public:
  // Validates `options`, then builds and starts a server for `services` (not owned; they must
  // outlive the server). Every service and the server as a whole ("") start SERVING. Errors
  // name the option at fault: bad address, unreadable token or TLS file, plaintext
  // non-loopback listener without `insecure`, a negative call limit, or a failed bind.
  static absl::StatusOr<std::unique_ptr<GrpcServer>> Create(
      const GrpcServerOptions& options, const std::vector<grpc::Service*>& services);

  // Shuts down with the configured deadline if still running.
  ~GrpcServer();

  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;

  // The bound TCP port (the picked one for port 0); 0 for unix sockets.
  int port() const { return port_; }
  // A target clients can dial: `HOST:PORT` (0.0.0.0/[::] become loopback) or `unix:PATH`.
  const std::string& target() const { return target_; }
  // The address the server listens on, as given with the bound port: `0.0.0.0:7070` for a
  // server on every IPv4 address, `unix:PATH` for a socket.
  const std::string& listen_address() const { return listen_address_; }
  // True when the listener is reachable only from this machine (loopback or unix socket).
  bool loopback_only() const { return loopback_only_; }
  // True when calls must carry a bearer token (options.token_file or options.tokens_file).
  bool authenticates() const { return verifier_ != nullptr; }
  // True when the listener speaks TLS.
  bool uses_tls() const { return !options_.tls_cert_file.empty(); }
  // Fully-qualified names of the registered services (health and reflection included).
  const std::vector<std::string>& service_names() const { return service_names_; }

  // Sets the health state of one service ("" = the whole server). Ignored after Shutdown.
  void SetServingStatus(const std::string& service, bool serving);

  // Sets health NOT_SERVING for all services, waits the drain period, stops accepting calls,
  // lets in-flight calls finish for up to `deadline`, then cancels the rest and returns.
  void Shutdown(absl::Duration deadline);
  // Shutdown with the configured shutdown deadline.
  void Shutdown();

  // Blocks until Shutdown has completed.
  void Wait();

  // Re-reads the tokens file (SIGHUP); calls in flight and open connections are kept. On error
  // the current callers stay and the error (naming the file) is returned; FailedPrecondition
  // when the server has no tokens file.
  absl::Status ReloadTokensFile();

  // The underlying grpc::Server, for framework code that needs it.
  grpc::Server* grpc_server() { return server_.get(); }

 private:
  GrpcServer(const GrpcServerOptions& options, std::unique_ptr<grpc::Server> server, int port,
             const ListenAddress& bound, std::vector<std::string> service_names,
             std::shared_ptr<CallVerifier> verifier);

  const GrpcServerOptions options_;
  const std::shared_ptr<CallVerifier> verifier_;  // null: every call admitted
  const std::unique_ptr<grpc::Server> server_;
  const int port_;
  const std::string target_;
  const std::string listen_address_;
  const bool loopback_only_;
  const std::vector<std::string> service_names_;
  absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace roboloop::common
