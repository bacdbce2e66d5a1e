// The gRPC adapter of EvalService: translates calls into EvalServiceHandler calls; a cancelled
// Evaluate stream (client TryCancel, deadline, disconnect) stops the evaluation.
#pragma once

#include <grpcpp/grpcpp.h>

#include "absl/time/time.h"
#include "eval/eval_service.h"
#include "registry/registry_client.h"
#include "roboloop/v1/eval.grpc.pb.h"

namespace roboloop::eval {

// Thread-safe: gRPC calls handlers concurrently; the handler is thread-safe.
class EvalGrpcService final : public v1::EvalService::Service {
 public:
  // Options of the adapter.
  struct Options {
    absl::Duration cancel_poll = absl::Milliseconds(20);  // how often Evaluate checks for cancellation
    // Where Promote moves aliases (not owned; thread-safe); null = Promote is FAILED_PRECONDITION.
    registry::RegistryClient* registry = nullptr;
    std::string dataset_cache_dir;  // local copies of training datasets (promotion's seed check)
  };

  // Serves `handler` (not owned; must outlive the service).
  EvalGrpcService(const EvalServiceHandler* handler, Options options);

  // Streams progress; the last message carries the evaluation.
  grpc::Status Evaluate(grpc::ServerContext* context, const v1::EvaluateRequest* request,
                        grpc::ServerWriter<v1::EvaluateProgress>* writer) override;
  grpc::Status Leaderboard(grpc::ServerContext* context, const v1::LeaderboardRequest* request,
                           v1::LeaderboardResponse* response) override;
  grpc::Status Compare(grpc::ServerContext* context, const v1::CompareRequest* request,
                       v1::Comparison* response) override;
  // eval/promotion.h PromoteIfBetter over the handler and the options' registry.
  grpc::Status Promote(grpc::ServerContext* context, const v1::PromoteCandidateRequest* request,
                       v1::PromotionDecision* response) override;
  grpc::Status GetProtocol(grpc::ServerContext* context, const v1::GetProtocolRequest* request,
                           v1::ProtocolInfo* response) override;

 private:
  const EvalServiceHandler* handler_;
  Options options_;
};

}  // namespace roboloop::eval
