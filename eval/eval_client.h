// The client of EvalService: runs evaluations on an eval server (streaming progress to a
// callback) and queries its leaderboard and comparisons.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/grpc_client.h"
#include "eval/eval_service.h"
#include "roboloop/v1/eval.grpc.pb.h"

namespace roboloop::eval {

// Thread-safe: calls may run concurrently (each uses its own context).
class EvalClient {
 public:
  // Creates a channel to `options.target` (validated by GrpcChannel::Create).
  static absl::StatusOr<std::unique_ptr<EvalClient>> Connect(const common::GrpcChannelOptions& options);

  // Runs `request` and calls `on_progress` (may be empty) for every progress message but the
  // last; returns the last message's evaluation. An error from `on_progress` cancels the call
  // and is returned; server errors keep their code and name the target.
  absl::StatusOr<v1::Evaluation> Evaluate(const v1::EvaluateRequest& request,
                                          const EvaluateProgressCallback& on_progress,
                                          absl::Duration deadline = absl::Hours(24)) const;

  // Thin wrappers over the unary RPCs.
  absl::StatusOr<v1::LeaderboardResponse> Leaderboard(const v1::LeaderboardRequest& request) const;
  absl::StatusOr<v1::Comparison> Compare(const v1::CompareRequest& request) const;
  // The protocol `name` stands for on the server, with its hash; Unimplemented from a server
  // older than the GetProtocol RPC.
  absl::StatusOr<v1::ProtocolInfo> GetProtocol(const std::string& name) const;
  // Promotes the candidate when it beats the champion (rollouts may run: `deadline` bounds
  // them; cancelling `cancel`, may be null, cancels the call).
  absl::StatusOr<v1::PromotionDecision> Promote(const v1::PromoteCandidateRequest& request,
                                                absl::Duration deadline = absl::Hours(24),
                                                const common::CancellationToken* cancel = nullptr) const;

 private:
  explicit EvalClient(std::unique_ptr<common::GrpcChannel> channel);

  std::unique_ptr<common::GrpcChannel> channel_;
  std::unique_ptr<v1::EvalService::Stub> stub_;
};

}  // namespace roboloop::eval
