#include "eval/eval_grpc_service.h"

#include <atomic>
#include <thread>

#include "absl/synchronization/notification.h"
#include "common/grpc_auth.h"
#include "common/grpc_status.h"

namespace roboloop::eval {

EvalGrpcService::EvalGrpcService(const EvalServiceHandler* handler, Options options)
    : handler_(handler), options_(options) {}

grpc::Status EvalGrpcService::Evaluate(grpc::ServerContext* context, const v1::EvaluateRequest* request,
                                       grpc::ServerWriter<v1::EvaluateProgress>* writer) {
  grpc::Status auth = common::CheckCallAuthenticated(*context);
  if (!auth.ok()) return auth;
  // The sync API has no cancellation callback: a watcher polls the context and raises the flag
  // the sharded rollout checks per episode.
  std::atomic<bool> cancel{false};
  absl::Notification finished;
  std::thread watcher([&] {
    while (!finished.WaitForNotificationWithTimeout(options_.cancel_poll)) {
      if (context->IsCancelled()) {
        cancel.store(true);
        return;
      }
    }
  });
  auto write = [&](const v1::EvaluateProgress& progress) -> absl::Status {
    if (writer->Write(progress)) return absl::OkStatus();
    cancel.store(true);
    return absl::CancelledError("the client closed the Evaluate stream");
  };
  absl::StatusOr<v1::Evaluation> evaluation = handler_->Evaluate(*request, write, &cancel);
  finished.Notify();
  watcher.join();
  if (!evaluation.ok()) return common::AbslToGrpc(evaluation.status());
  v1::EvaluateProgress last;
  last.set_episodes_total(evaluation->protocol().episodes());
  last.set_episodes_done(evaluation->episodes_size());
  last.set_successes(evaluation->aggregates().success().successes());
  *last.mutable_evaluation() = *std::move(evaluation);
  writer->Write(last);
  return grpc::Status::OK;
}

grpc::Status EvalGrpcService::Leaderboard(grpc::ServerContext* context, const v1::LeaderboardRequest* request,
                                          v1::LeaderboardResponse* response) {
  grpc::Status auth = common::CheckCallAuthenticated(*context);
  if (!auth.ok()) return auth;
  absl::StatusOr<v1::LeaderboardResponse> top = handler_->Leaderboard(*request);
  if (!top.ok()) return common::AbslToGrpc(top.status());
  *response = *std::move(top);
  return grpc::Status::OK;
}

grpc::Status EvalGrpcService::Compare(grpc::ServerContext* context, const v1::CompareRequest* request,
                                      v1::Comparison* response) {
  grpc::Status auth = common::CheckCallAuthenticated(*context);
  if (!auth.ok()) return auth;
  absl::StatusOr<v1::Comparison> comparison = handler_->Compare(*request);
  if (!comparison.ok()) return common::AbslToGrpc(comparison.status());
  *response = *std::move(comparison);
  return grpc::Status::OK;
}

}  // namespace roboloop::eval
