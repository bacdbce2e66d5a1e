// The interceptor registers each call with one process-wide watcher; the watcher's thread sleeps
// until the earliest deadline and cancels the calls that are past theirs with
// grpc_call_cancel_with_status, which gRPC core sends to the client as the call's status.
#include "common/grpc_call_limits.h"

#include <algorithm>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "grpc/grpc.h"

namespace roboloop::common {
namespace {

constexpr char kHealthWatchMethod[] = "/grpc.health.v1.Health/Watch";
constexpr char kIdleTimeoutFlag[] = "--upload-idle-timeout";

// The deadlines of one call; InfiniteFuture when a limit does not apply (now).
struct WatchedCall {
  grpc_call* call = nullptr;
  absl::Time deadline = absl::InfiniteFuture();
  std::string deadline_message;
  absl::Time idle_deadline = absl::InfiniteFuture();
  std::string idle_message;
  std::optional<std::string> breach;  // set once the watcher cancelled the call
};

// Keeps the calls of every server of the process and cancels those past a deadline.
class CallWatcher {
 public:
  static CallWatcher& Get() {
    static CallWatcher* const watcher = new CallWatcher();  // its thread runs until exit
    return *watcher;
  }

  // Starts watching the call of `context` (deadline: InfiniteFuture for none).
  void Watch(const grpc::ServerContextBase* context, grpc_call* call, absl::Time deadline,
             std::string deadline_message) {
    absl::MutexLock lock(&mu_);
    WatchedCall& watched = calls_[context];
    watched = WatchedCall{};
    watched.call = call;
    watched.deadline = deadline;
    watched.deadline_message = std::move(deadline_message);
    WakeFor(deadline);
  }

  // Sets (InfiniteFuture: clears) the idle deadline of a watched call.
  void SetIdleDeadline(const grpc::ServerContextBase* context, absl::Time idle_deadline,
                       const std::string& idle_message) {
    absl::MutexLock lock(&mu_);
    auto it = calls_.find(context);
    if (it == calls_.end()) return;
    it->second.idle_deadline = idle_deadline;
    if (it->second.idle_message.empty()) it->second.idle_message = idle_message;
    WakeFor(idle_deadline);
  }

  // Stops watching; the call may end and be freed afterwards.
  void Forget(const grpc::ServerContextBase* context) {
    absl::MutexLock lock(&mu_);
    calls_.erase(context);
  }

  std::optional<std::string> Breach(const grpc::ServerContextBase* context) {
    absl::MutexLock lock(&mu_);
    auto it = calls_.find(context);
    if (it == calls_.end()) return std::nullopt;
    return it->second.breach;
  }

 private:
  CallWatcher() { std::thread([this] { Run(); }).detach(); }

  void WakeFor(absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (deadline < next_wake_) woken_ = true;
  }

  void Run() {
    while (true) {
      std::vector<std::pair<grpc_call*, std::string>> due;
      {
        absl::MutexLock lock(&mu_);
        next_wake_ = TakeDueCalls(absl::Now(), &due);
        woken_ = false;
        if (due.empty()) mu_.AwaitWithDeadline(absl::Condition(&woken_), next_wake_);
      }
      // Outside the lock: cancelling may run gRPC callbacks that reach this watcher.
      for (auto& [call, message] : due) {
        grpc_call_cancel_with_status(call, GRPC_STATUS_DEADLINE_EXCEEDED, message.c_str(), nullptr);
        grpc_call_unref(call);
      }
    }
  }

  // Marks every call past a deadline as breached and adds it (with a reference, so it outlives
  // its handler until cancelled) to `due`; returns the earliest deadline still ahead.
  absl::Time TakeDueCalls(absl::Time now, std::vector<std::pair<grpc_call*, std::string>>* due)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    absl::Time earliest = absl::InfiniteFuture();
    for (auto& [context, watched] : calls_) {
      if (watched.breach.has_value()) continue;
      if (watched.deadline <= now) {
        watched.breach = watched.deadline_message;
      } else if (watched.idle_deadline <= now) {
        watched.breach = watched.idle_message;
      } else {
        earliest = std::min({earliest, watched.deadline, watched.idle_deadline});
        continue;
      }
      grpc_call_ref(watched.call);
      due->emplace_back(watched.call, *watched.breach);
    }
    return earliest;
  }

  absl::Mutex mu_;
  std::map<const grpc::ServerContextBase*, WatchedCall> calls_ ABSL_GUARDED_BY(mu_);
  absl::Time next_wake_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  bool woken_ ABSL_GUARDED_BY(mu_) = false;
};

// A limit and the flag that sets it.
struct ClassDeadline {
  absl::Duration limit;
  const char* flag;
};

ClassDeadline DeadlineOf(CallClass call_class, const CallLimits& limits) {
  switch (call_class) {
    case CallClass::kUnary:
      return {limits.unary_deadline, "--unary-deadline"};
    case CallClass::kTransfer:
      return {limits.transfer_deadline, "--transfer-deadline"};
    case CallClass::kLong:
      return {limits.long_call_deadline, "--long-call-deadline"};
    case CallClass::kUnlimited:
      break;
  }
  return {absl::ZeroDuration(), ""};
}

CallClass ClassOf(absl::string_view method, grpc::experimental::ServerRpcInfo::Type type,
                  const MethodClasses& classes) {
  auto it = classes.find(method);
  if (it != classes.end()) return it->second;
  if (method == kHealthWatchMethod) return CallClass::kUnlimited;
  return type == grpc::experimental::ServerRpcInfo::Type::UNARY ? CallClass::kUnary : CallClass::kTransfer;
}

bool ReceivesStream(grpc::experimental::ServerRpcInfo::Type type) {
  return type == grpc::experimental::ServerRpcInfo::Type::CLIENT_STREAMING ||
         type == grpc::experimental::ServerRpcInfo::Type::BIDI_STREAMING;
}

// See MakeCallLimitInterceptorFactory. One per call.
class CallLimitInterceptor final : public grpc::experimental::Interceptor {
 public:
  CallLimitInterceptor(grpc::experimental::ServerRpcInfo* info, const CallLimits& limits,
                       const MethodClasses& classes)
      : context_(info->server_context()),
        method_(info->method() == nullptr ? "" : info->method()),
        deadline_(DeadlineOf(ClassOf(method_, info->type(), classes), limits)),
        idle_timeout_(ReceivesStream(info->type()) ? limits.receive_idle_timeout : absl::ZeroDuration()),
        idle_message_(absl::StrCat(method_, " received no message from the client for ",
                                   absl::FormatDuration(idle_timeout_), " (", kIdleTimeoutFlag,
                                   ") and was cancelled")) {}

  ~CallLimitInterceptor() override { StopWatching(); }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    using grpc::experimental::InterceptionHookPoints;
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      StartWatching();
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE)) {
      // A message restarts the idle clock; the end of the stream (no message) stops it.
      RestartIdleClock(methods->GetRecvMessage() != nullptr);
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) StopWatching();
    methods->Proceed();
  }

 private:
  // Registers the call with the watcher, unless no limit applies to it.
  void StartWatching() {
    const absl::Time now = absl::Now();
    const bool limited = deadline_.limit > absl::ZeroDuration();
    if (!limited && idle_timeout_ <= absl::ZeroDuration()) return;
    watching_ = true;
    const std::string message =
        limited ? absl::StrCat(method_, " ran past the server's deadline of ",
                               absl::FormatDuration(deadline_.limit), " (", deadline_.flag,
                               ") and was cancelled")
                : "";
    CallWatcher::Get().Watch(context_, context_->c_call(),
                             limited ? now + deadline_.limit : absl::InfiniteFuture(), message);
    RestartIdleClock(true);
  }

  void StopWatching() {
    if (watching_) CallWatcher::Get().Forget(context_);
    watching_ = false;
  }

  void RestartIdleClock(bool awaiting_message) {
    if (!watching_ || idle_timeout_ <= absl::ZeroDuration()) return;
    CallWatcher::Get().SetIdleDeadline(
        context_, awaiting_message ? absl::Now() + idle_timeout_ : absl::InfiniteFuture(), idle_message_);
  }

  grpc::ServerContextBase* const context_;
  const std::string method_;
  const ClassDeadline deadline_;
  const absl::Duration idle_timeout_;
  const std::string idle_message_;
  bool watching_ = false;  // registered with the watcher (hooks of one call never run concurrently)
};

class CallLimitInterceptorFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  CallLimitInterceptorFactory(const CallLimits& limits, MethodClasses classes)
      : limits_(limits), classes_(std::move(classes)) {}

  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override {
    return new CallLimitInterceptor(info, limits_, classes_);
  }

 private:
  const CallLimits limits_;
  const MethodClasses classes_;
};

}  // namespace

absl::Status ValidateCallLimits(const CallLimits& limits) {
  std::vector<ClassDeadline> checked = {{limits.receive_idle_timeout, kIdleTimeoutFlag}};
  for (CallClass call_class : {CallClass::kUnary, CallClass::kTransfer, CallClass::kLong}) {
    checked.push_back(DeadlineOf(call_class, limits));
  }
  for (const ClassDeadline& limit : checked) {
    if (limit.limit < absl::ZeroDuration()) {
      return absl::InvalidArgumentError(absl::StrCat(limit.flag, " must not be negative (0 = no limit), got ",
                                                     absl::FormatDuration(limit.limit)));
    }
  }
  return absl::OkStatus();
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> MakeCallLimitInterceptorFactory(
    const CallLimits& limits, MethodClasses classes) {
  return std::make_unique<CallLimitInterceptorFactory>(limits, std::move(classes));
}

std::optional<std::string> CallLimitBreach(const grpc::ServerContextBase& context) {
  return CallWatcher::Get().Breach(&context);
}

}  // namespace roboloop::common
