// The transport-free logic of EvalService (issue 7, req 4; docs/architecture.md §3): evaluates a
// registry checkpoint under a protocol on one or several SimService endpoints, reuses cached
// evaluations, stores every evaluation (failed ones without a rate), and answers leaderboard
// and paired-comparison queries. The gRPC adapter (eval/eval_grpc_service.h) and the CLI
// drive it.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/cancellation.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "eval/leaderboard_store.h"
#include "eval/metrics.h"
#include "eval/protocol.h"
#include "registry/registry_client.h"
#include "roboloop/v1/eval.pb.h"

namespace roboloop::eval {

// Receives progress of a running evaluation; an error stops it.
using EvaluateProgressCallback = std::function<absl::Status(const v1::EvaluateProgress&)>;

// Thread-safe: all methods may run concurrently (the store, the registry client and the sim
// clients are thread-safe).
class EvalServiceHandler {
 public:
  // Options of the handler.
  struct Options {
    LeaderboardStore* store = nullptr;              // evaluations (not owned; must outlive the handler)
    registry::RegistryClient* registry = nullptr;   // resolves checkpoints (not owned; must outlive it)
    std::string protocols_dir = kDefaultProtocolsDir;  // where named protocols live
    // Used when a request names none. When set, a request may name only these: the service never
    // dials (nor sends its sim token to) an address a caller chose; when empty, it dials what
    // requests name.
    std::vector<std::string> default_sim_endpoints;
    // How errors name sim endpoints the user knows by another name than their address (address ->
    // name, e.g. a sim service this process started on a private unix socket); others by address.
    std::map<std::string, std::string> sim_display_names;
    std::string sim_token_file = "";                // bearer token file for the sim endpoints
    int shards_per_endpoint = 2;                    // seed-range shards per endpoint
    int envs = 4;                                   // envs per shard rollout
    int threads = 1;                                // physics threads per shard rollout
    BootstrapOptions bootstrap;                     // return interval of the aggregates
  };

  // InvalidArgument when the store or registry is missing or a count is below 1.
  static absl::StatusOr<std::unique_ptr<EvalServiceHandler>> Create(const Options& options);

  // Resolves the protocol (a name under protocols_dir, or inline) and the checkpoint, and
  // validates both against the endpoints' tasks before any rollout: an endpoint outside the
  // configured ones (PermissionDenied naming it, Options::default_sim_endpoints), unknown task or protocol,
  // zero episodes, a task definition that differs between endpoints or from the protocol's pin,
  // checkpoint specs that do not fit the task. Then returns the newest cached evaluation for
  // (protocol hash, checkpoint id) unless `force`, or runs the seed range in shards over the
  // endpoints (re-dispatching the shard of an endpoint that fails), stores the evaluation and
  // returns it. `on_progress` (may be empty) is called from worker threads, one call at a time;
  // the episodes of a re-dispatched shard are counted again. When the run cannot complete
  // (every endpoint failed, `cancel` was cancelled, progress failed) it is stored FAILED and the
  // error is returned naming the evaluation id. A new evaluation records `requested_by` (the
  // user who asked, see common/grpc_caller.h); a cached one keeps its original requester.
  absl::StatusOr<v1::Evaluation> Evaluate(const v1::EvaluateRequest& request, const std::string& requested_by,
                                          const EvaluateProgressCallback& on_progress,
                                          const common::CancellationToken* cancel) const;

  // The store's Top over the request's filters (top 0 = 10).
  absl::StatusOr<v1::LeaderboardResponse> Leaderboard(const v1::LeaderboardRequest& request) const;

  // Paired comparison of candidate vs baseline under request.protocol_hash; each is an
  // evaluation id (or a unique prefix of one) or a checkpoint id (its newest completed evaluation
  // under the protocol), as ResolveStoredEvaluation reads them.
  // NotFound / FailedPrecondition naming the reference that has no usable evaluation.
  absl::StatusOr<v1::Comparison> Compare(const v1::CompareRequest& request) const;

  // The protocol named `name` under protocols_dir with its ProtocolHash (the GetProtocol RPC):
  // InvalidArgument for a name that is a path (CheckServedProtocolName), else LoadProtocol's errors.
  absl::StatusOr<v1::ProtocolInfo> GetProtocol(const std::string& name) const;

  // Where named protocols live (Options::protocols_dir).
  const std::string& protocols_dir() const { return options_.protocols_dir; }

  // Shards re-dispatched after an endpoint failed, since the handler was created.
  int redispatched_shards() const { return redispatched_.load(); }

 private:
  explicit EvalServiceHandler(const Options& options) : options_(options) {}

  Options options_;
  mutable std::atomic<int> redispatched_{0};
};

// Shortest protocol hash prefix ResolveStoredProtocolHash accepts (as for checkpoint id prefixes).
inline constexpr size_t kMinProtocolHashPrefix = 6;

// The protocol hash `text` names among the stored evaluations: a full hash as given, else the one
// stored protocol whose hash starts with `text` (>= kMinProtocolHashPrefix lower-case hex digits;
// the leaderboard shows 8, `eval` 12) or whose name is `text`. NotFound naming `text` when none
// matches; InvalidArgument listing the candidates (hash and name) when several do.
absl::StatusOr<std::string> ResolveStoredProtocolHash(LeaderboardStore& store, const std::string& text);

// The hash evaluations under `protocol` (a protocol file as LoadProtocol reads it) are stored
// with: ProtocolHash(protocol) when it pins its task's definition, else the hash of the one
// stored protocol that is `protocol` pinned (an evaluation pins the task's definition before it
// hashes), or ProtocolHash(protocol) when none is. InvalidArgument listing the candidates when
// evaluations ran under several definitions of the task.
absl::StatusOr<std::string> ResolveLoadedProtocolHash(LeaderboardStore& store, const v1::Protocol& protocol);

// Shortest evaluation id prefix ResolveStoredEvaluation accepts (as for checkpoint id prefixes).
inline constexpr size_t kMinEvaluationIdPrefix = 6;

// The evaluation `ref` names under `protocol_hash`: an evaluation id, else the newest completed
// evaluation of checkpoint id `ref`, else the one evaluation whose id starts with `ref` (>=
// kMinEvaluationIdPrefix characters; InvalidArgument listing the candidates when several do). A
// named evaluation must be COMPLETED under that protocol (FailedPrecondition otherwise); NotFound
// when `ref` names none.
absl::StatusOr<v1::Evaluation> ResolveStoredEvaluation(LeaderboardStore& store, const std::string& ref,
                                                       const std::string& protocol_hash);

// "full_chunk", "receding_horizon:N" or "temporal_ensembling:m" for a protocol's chunk
// execution (sim/checkpoint_policy.h); InvalidArgument for an unset mode.
absl::StatusOr<std::string> ChunkExecutionText(const v1::ChunkExecution& execution);

}  // namespace roboloop::eval
