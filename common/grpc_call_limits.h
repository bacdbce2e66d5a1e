// Server-side limits on the duration of calls (issue 25, req 6), enforced on every call of every
// roboloop server whatever its handler does: a deadline per method class, and for calls that
// receive a stream (uploads) an idle timeout since the client's last message. A call past either
// is cancelled by the server with DEADLINE_EXCEEDED and a message naming the limit (its `serve`
// flag) and its value; its handler sees the call cancelled (ServerContext::IsCancelled, a failed
// Read or Write) and can ask CallLimitBreach why, to clean up what the call left.
//
// One process-wide watcher thread keeps the deadlines of all calls of all servers.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/server_interceptor.h"

namespace roboloop::common {

// Which server-side deadline a method's calls get.
enum class CallClass {
  kUnary,      // quick request/response calls (lists, gets, registrations)
  kTransfer,   // streams of bytes: uploads, downloads
  kLong,       // calls that run work: evaluations, rollouts, training, verify, gc
  kUnlimited,  // no deadline (health Watch streams, which probes keep open)
};

// The limits; a zero duration means "no limit", the default here (in-process servers serve
// only their own process); `roboloop serve` sets its own defaults (cli/flags.h).
struct CallLimits {
  absl::Duration unary_deadline;     // --unary-deadline
  absl::Duration transfer_deadline;  // --transfer-deadline
  absl::Duration long_call_deadline;  // --long-call-deadline
  // Longest wait for the next message of a call that receives a stream (--upload-idle-timeout).
  absl::Duration receive_idle_timeout;
};

// The class of some methods, by full path ("/roboloop.v1.EvalService/Evaluate"). A method not
// listed is kUnary when unary, kTransfer when streaming; `/grpc.health.v1.Health/Watch` is
// kUnlimited.
using MethodClasses = std::map<std::string, CallClass, std::less<>>;

// InvalidArgument naming the flag of the first negative limit; OK otherwise.
absl::Status ValidateCallLimits(const CallLimits& limits);

// A server interceptor that applies `limits` to every call, each method by its class in
// `classes`.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> MakeCallLimitInterceptorFactory(
    const CallLimits& limits, MethodClasses classes);

// The message the server cancelled the call of `context` with, when one of the limits cancelled
// it; nullopt when none did (so far). Thread-safe; meaningful while the handler runs.
std::optional<std::string> CallLimitBreach(const grpc::ServerContextBase& context);

}  // namespace roboloop::common
