#include "eval/eval_service.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/ids.h"
#include "common/sha256.h"
#include "common/status.h"
#include "eval/evaluation.h"
#include "eval/sharded_rollout.h"
#include "sim/checkpoint_policy.h"
#include "sim/sim_client.h"

namespace roboloop::eval {
namespace {

// The sim endpoints of one evaluation, connected, with the protocol task as each one serves it.
struct SimFleet {
  std::vector<std::unique_ptr<sim::SimClient>> clients;  // the endpoints that answered
  std::vector<std::string> names;                        // how errors name them (ConnectFleet)
  std::vector<Endpoint> endpoints;                       // views of `clients`
  std::vector<std::string> known_tasks;                  // tasks of the first endpoint
  std::vector<v1::ListTasksResponse> tasks;              // per endpoint in `endpoints`
};

absl::StatusOr<v1::Protocol> ResolveProtocol(const v1::EvaluateRequest& request, const std::string& protocols_dir) {
  switch (request.protocol_source_case()) {
    case v1::EvaluateRequest::kProtocolName:
      ROBOLOOP_RETURN_IF_ERROR(CheckServedProtocolName(request.protocol_name()));
      return LoadProtocol(request.protocol_name(), protocols_dir);
    case v1::EvaluateRequest::kProtocol:
      return request.protocol();
    default:
      return absl::InvalidArgumentError("an evaluation needs a protocol: a protocol name or an inline protocol");
  }
}

// PermissionDenied naming the first of `names` that is not among `configured`, when any are
// configured: a caller may not make the service dial (and send its sim token to) other addresses.
absl::Status CheckEndpointsConfigured(const std::vector<std::string>& names, const std::vector<std::string>& configured) {
  if (configured.empty()) return absl::OkStatus();
  for (const std::string& name : names) {
    if (std::find(configured.begin(), configured.end(), name) == configured.end()) {
      return absl::PermissionDeniedError(absl::StrCat("sim endpoint '", name, "' is not one of this EvalService's (",
                                                      absl::StrJoin(configured, ", "),
                                                      "): a request may name only those (serve eval --sim)"));
    }
  }
  return absl::OkStatus();
}

// Connects to every endpoint and lists its tasks; endpoints that do not answer are left out
// (Unavailable naming them all when none answers). Endpoints are named by their `display_names`
// entry when they have one, else by address.
absl::StatusOr<SimFleet> ConnectFleet(const std::vector<std::string>& addresses, const std::string& token_file,
                                      const std::map<std::string, std::string>& display_names) {
  if (addresses.empty()) return absl::InvalidArgumentError("an evaluation needs at least one sim endpoint");
  SimFleet fleet;
  std::vector<std::string> failures;
  for (const std::string& address : addresses) {
    common::GrpcChannelOptions channel;
    channel.target = address;
    channel.token_file = token_file;
    const auto display_name = display_names.find(address);
    if (display_name != display_names.end()) channel.display_name = display_name->second;
    const std::string name = display_name != display_names.end() ? display_name->second : address;
    absl::StatusOr<std::unique_ptr<sim::SimClient>> client = sim::SimClient::Connect(channel);
    absl::StatusOr<v1::ListTasksResponse> tasks =
        client.ok() ? (*client)->ListTasks() : absl::StatusOr<v1::ListTasksResponse>(client.status());
    if (!tasks.ok()) {
      failures.push_back(absl::StrCat(name, ": ", tasks.status().ToString()));
      continue;
    }
    fleet.tasks.push_back(*std::move(tasks));
    fleet.clients.push_back(*std::move(client));
    fleet.names.push_back(name);
  }
  if (fleet.clients.empty()) {
    return absl::UnavailableError(absl::StrCat("no sim endpoint answered: ", absl::StrJoin(failures, "; ")));
  }
  for (size_t i = 0; i < fleet.clients.size(); ++i) {
    fleet.endpoints.push_back(Endpoint{fleet.names[i], fleet.clients[i].get()});
  }
  for (const v1::TaskInfo& task : fleet.tasks.front().tasks()) fleet.known_tasks.push_back(task.name());
  return fleet;
}

// The protocol task as the fleet serves it; FailedPrecondition when an endpoint lacks it or
// defines it differently.
absl::StatusOr<v1::TaskInfo> FleetTask(const SimFleet& fleet, const std::string& task) {
  std::optional<v1::TaskInfo> first;
  for (size_t i = 0; i < fleet.tasks.size(); ++i) {
    const v1::TaskInfo* found = nullptr;
    for (const v1::TaskInfo& info : fleet.tasks[i].tasks()) {
      if (info.name() == task) found = &info;
    }
    if (found == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("sim endpoint ", fleet.endpoints[i].name, " does not serve task ", task));
    }
    if (!first.has_value()) first = *found;
    if (found->definition_hash() != first->definition_hash()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "sim endpoints ", fleet.endpoints[0].name, " and ", fleet.endpoints[i].name, " define task ", task,
          " differently (definition hashes ", first->definition_hash(), " and ", found->definition_hash(), ")"));
    }
  }
  return *first;
}

sim::ObsSpec ObsSpecOf(const v1::TaskInfo& task) {
  sim::ObsSpec spec;
  for (const v1::ObsKey& key : task.obs_keys()) {
    spec.keys.push_back({key.name(), {key.shape().begin(), key.shape().end()}});
  }
  for (const v1::CameraObs& camera : task.cameras()) {
    spec.cameras.push_back({camera.name(), camera.camera(), camera.width(), camera.height()});
  }
  return spec;
}

sim::ActionSpec ActionSpecOf(const v1::TaskInfo& task) {
  return sim::ActionSpec{{task.action_low().begin(), task.action_low().end()},
                         {task.action_high().begin(), task.action_high().end()}};
}

// Checks the protocol's robustness perturbations against the task (noise keys, non-negative stds and
// delay, ordered positive ranges) before anything is stored; InvalidArgument naming the protocol.
absl::Status CheckRobustnessFits(const v1::Protocol& protocol, const v1::TaskInfo& task) {
  return Annotate(sim::ValidateRobustness(sim::RobustnessFromProto(protocol.robustness()), ObsSpecOf(task)),
                  absl::StrCat("protocol '", protocol.name(), "' on task ", task.name()));
}

// Checks the checkpoint's manifest against the task and the protocol's chunk execution.
absl::Status CheckCheckpointFits(const v1::Checkpoint& checkpoint, const std::string& ref,
                                 const v1::TaskInfo& task, const v1::Protocol& protocol) {
  const nlohmann::json manifest = nlohmann::json::parse(checkpoint.manifest_json(), nullptr, false);
  const std::string label = absl::StrCat(ref, " (", checkpoint.id(), ")");
  absl::StatusOr<sim::CheckpointPolicySpec> spec =
      sim::CheckManifestFitsTask(manifest, label, ObsSpecOf(task), ActionSpecOf(task));
  if (!spec.ok()) return Annotate(spec.status(), absl::StrCat("task ", task.name()));
  const v1::ChunkExecution& chunk = protocol.execution().chunk();
  if (chunk.mode() == v1::ChunkExecution::RECEDING_HORIZON && chunk.receding_steps() > spec->chunk) {
    return absl::InvalidArgumentError(absl::StrCat("protocol '", protocol.name(), "' executes ",
                                                   chunk.receding_steps(), " actions per chunk but checkpoint ", label,
                                                   " predicts chunks of ", spec->chunk));
  }
  return absl::OkStatus();
}

// The endpoints' libraries; a library whose versions differ between endpoints lists each.
void AddFleetLibraries(const SimFleet& fleet, v1::Provenance* provenance) {
  std::map<std::string, std::set<std::string>> versions;
  for (const v1::ListTasksResponse& tasks : fleet.tasks) {
    for (const auto& [name, version] : tasks.libraries()) versions[name].insert(version);
  }
  for (const auto& [name, seen] : versions) (*provenance->mutable_libraries())[name] = absl::StrJoin(seen, " | ");
}

v1::Evaluation NewEvaluation(const v1::Protocol& protocol, const v1::Checkpoint& checkpoint, bool forced) {
  v1::Evaluation evaluation;
  evaluation.set_id(NewUuid());
  *evaluation.mutable_protocol() = protocol;
  evaluation.set_protocol_hash(ProtocolHash(protocol));
  evaluation.set_checkpoint_id(checkpoint.id());
  evaluation.set_model(checkpoint.model());
  evaluation.set_model_version(checkpoint.version());
  evaluation.set_dataset_id(checkpoint.dataset_id());
  for (const std::string& alias : checkpoint.aliases()) evaluation.add_aliases(alias);
  *evaluation.mutable_provenance() = ProcessProvenance();
  evaluation.set_created_unix_us(NowUnixMicros());
  evaluation.set_status(v1::EVALUATION_RUNNING);
  evaluation.set_forced(forced);
  return evaluation;
}

absl::StatusOr<v1::RolloutRequest> RolloutFor(const v1::Protocol& protocol, const std::string& checkpoint_id,
                                              const EvalServiceHandler::Options& options) {
  v1::RolloutRequest request;
  request.set_task(protocol.task());
  *request.mutable_robustness() = protocol.robustness();
  request.set_policy(checkpoint_id);
  request.set_base_seed(protocol.base_seed());
  request.set_first_episode(protocol.seed_start());
  request.set_num_episodes(protocol.episodes());
  request.set_max_steps(protocol.max_steps());
  request.set_envs(options.envs);
  request.set_threads(options.threads);
  ROBOLOOP_ASSIGN_OR_RETURN(std::string execution, ChunkExecutionText(protocol.execution().chunk()));
  request.set_chunk_execution(execution);
  request.set_batch_invariant(BatchInvariant(protocol));
  return request;
}

// The stored evaluation whose id starts with `prefix` (>= kMinEvaluationIdPrefix characters of a
// lower-case UUID); NotFound when none does, InvalidArgument listing them when several do.
absl::StatusOr<std::string> EvaluationIdWithPrefix(LeaderboardStore& store, const std::string& prefix) {
  constexpr int kMaxCandidates = 10;
  const bool uuid_text = prefix.find_first_not_of("0123456789abcdef-") == std::string::npos;
  if (prefix.size() < kMinEvaluationIdPrefix || !uuid_text) {
    return absl::NotFoundError(absl::StrCat("'", prefix, "' is no evaluation id prefix"));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::string> ids, store.EvaluationIdsWithPrefix(prefix, kMaxCandidates));
  if (ids.empty()) return absl::NotFoundError(absl::StrCat("no evaluation id starts with ", prefix));
  if (ids.size() == 1) return ids.front();
  const bool more = ids.size() == static_cast<size_t>(kMaxCandidates);
  return absl::InvalidArgumentError(absl::StrCat("evaluation id prefix ", prefix, " is ambiguous; candidates: ",
                                                 absl::StrJoin(ids, ", "), more ? ", ..." : ""));
}

}  // namespace

absl::StatusOr<std::unique_ptr<EvalServiceHandler>> EvalServiceHandler::Create(const Options& options) {
  if (options.store == nullptr || options.registry == nullptr) {
    return absl::InvalidArgumentError("EvalServiceHandler needs a leaderboard store and a registry client");
  }
  if (options.shards_per_endpoint < 1 || options.envs < 1 || options.threads < 1) {
    return absl::InvalidArgumentError("EvalServiceHandler: shards_per_endpoint, envs and threads must be >= 1");
  }
  return std::unique_ptr<EvalServiceHandler>(new EvalServiceHandler(options));
}

absl::StatusOr<v1::Evaluation> EvalServiceHandler::Evaluate(const v1::EvaluateRequest& request,
                                                            const std::string& requested_by,
                                                            const EvaluateProgressCallback& on_progress,
                                                            const common::CancellationToken* cancel) const {
  if (request.checkpoint_ref().empty()) return absl::InvalidArgumentError("an evaluation needs a checkpoint reference");
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Protocol protocol, ResolveProtocol(request, options_.protocols_dir));
  std::vector<std::string> names(request.sim_endpoints().begin(), request.sim_endpoints().end());
  if (names.empty()) names = options_.default_sim_endpoints;
  ROBOLOOP_RETURN_IF_ERROR(CheckEndpointsConfigured(names, options_.default_sim_endpoints));
  ROBOLOOP_ASSIGN_OR_RETURN(SimFleet fleet, ConnectFleet(names, options_.sim_token_file, options_.sim_display_names));
  ROBOLOOP_RETURN_IF_ERROR(ValidateProtocol(protocol, fleet.known_tasks));
  ROBOLOOP_ASSIGN_OR_RETURN(v1::TaskInfo task, FleetTask(fleet, protocol.task()));
  ROBOLOOP_RETURN_IF_ERROR(CheckRobustnessFits(protocol, task));
  ROBOLOOP_RETURN_IF_ERROR(PinTaskDefinition(task.definition_hash(), &protocol));
  absl::StatusOr<v1::Checkpoint> checkpoint = options_.registry->GetCheckpoint(request.checkpoint_ref());
  if (!checkpoint.ok()) return Annotate(checkpoint.status(), absl::StrCat("checkpoint ", request.checkpoint_ref()));
  ROBOLOOP_RETURN_IF_ERROR(CheckCheckpointFits(*checkpoint, request.checkpoint_ref(), task, protocol));
  ROBOLOOP_ASSIGN_OR_RETURN(v1::RolloutRequest rollout, RolloutFor(protocol, checkpoint->id(), options_));

  ROBOLOOP_ASSIGN_OR_RETURN(std::optional<v1::Evaluation> cached,
                            options_.store->FindCached(ProtocolHash(protocol), checkpoint->id()));
  if (cached.has_value() && !request.force()) {
    if (on_progress) {
      v1::EvaluateProgress progress;
      progress.set_cached(true);
      progress.set_episodes_done(protocol.episodes());
      progress.set_episodes_total(protocol.episodes());
      progress.set_successes(cached->aggregates().success().successes());
      ROBOLOOP_RETURN_IF_ERROR(on_progress(progress));
    }
    return *std::move(cached);
  }

  v1::Evaluation evaluation = NewEvaluation(protocol, *checkpoint, request.force() && cached.has_value());
  evaluation.set_requested_by(requested_by);
  AddFleetLibraries(fleet, evaluation.mutable_provenance());
  ShardedRolloutOptions sharding;
  sharding.shards_per_endpoint = options_.shards_per_endpoint;
  sharding.cancel = cancel;
  sharding.redispatched = &redispatched_;
  if (on_progress) {
    sharding.on_progress = [&](const ShardProgress& p) {
      v1::EvaluateProgress progress;
      progress.set_episodes_done(p.episodes_done);
      progress.set_episodes_total(protocol.episodes());
      progress.set_successes(p.successes);
      return on_progress(progress);
    };
  }
  absl::StatusOr<std::vector<v1::EpisodeRecord>> records = RunShardedRollout(rollout, fleet.endpoints, sharding);
  absl::Status outcome = records.status();
  if (records.ok()) {
    for (const v1::EpisodeRecord& record : *records) *evaluation.add_episodes() = ToEpisodeResult(record);
    outcome = CompleteEvaluation(options_.bootstrap, &evaluation);
  }
  if (!outcome.ok()) {
    FailEvaluation(std::string(outcome.message()), &evaluation);
    ROBOLOOP_RETURN_IF_ERROR(options_.store->Store(evaluation));
    return Annotate(outcome, absl::StrCat("evaluation ", evaluation.id(), " failed (stored as failed)"));
  }
  ROBOLOOP_RETURN_IF_ERROR(options_.store->Store(evaluation));
  return evaluation;
}

absl::StatusOr<v1::LeaderboardResponse> EvalServiceHandler::Leaderboard(const v1::LeaderboardRequest& request) const {
  LeaderboardQuery query;
  query.task = request.task();
  query.protocol_hash = request.protocol_hash();
  query.model = request.model();
  query.dataset_id = request.dataset_id();
  query.alias = request.alias();
  query.since_unix_us = request.since_unix_us();
  query.until_unix_us = request.until_unix_us();
  query.limit = request.top() == 0 ? 10 : request.top();
  switch (request.metric()) {
    case v1::METRIC_SUCCESS_RATE:
      query.metric = RankMetric::kSuccessRate;
      break;
    case v1::METRIC_MEAN_RETURN:
      query.metric = RankMetric::kMeanReturn;
      break;
    default:
      query.metric = RankMetric::kSuccessLower;
  }
  if (query.limit < 1) return absl::InvalidArgumentError(absl::StrCat("top must be >= 0, got ", request.top()));
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<v1::Evaluation> top, options_.store->Top(query));
  v1::LeaderboardResponse response;
  for (v1::Evaluation& e : top) *response.add_evaluations() = std::move(e);
  return response;
}

absl::StatusOr<v1::ProtocolInfo> EvalServiceHandler::GetProtocol(const std::string& name) const {
  ROBOLOOP_RETURN_IF_ERROR(CheckServedProtocolName(name));
  v1::ProtocolInfo info;
  ROBOLOOP_ASSIGN_OR_RETURN(*info.mutable_protocol(), LoadProtocol(name, options_.protocols_dir));
  info.set_protocol_hash(ProtocolHash(info.protocol()));
  return info;
}

absl::StatusOr<v1::Comparison> EvalServiceHandler::Compare(const v1::CompareRequest& request) const {
  if (request.protocol_hash().empty()) return absl::InvalidArgumentError("compare needs a protocol hash");
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Evaluation candidate,
                            ResolveStoredEvaluation(*options_.store, request.candidate(), request.protocol_hash()));
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Evaluation baseline,
                            ResolveStoredEvaluation(*options_.store, request.baseline(), request.protocol_hash()));
  const CompareOptions options = CompareOptionsAt(request.alpha() != 0 ? request.alpha() : CompareOptions().alpha);
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Comparison comparison,
                            ComparePaired(candidate.episodes(), baseline.episodes(), options));
  comparison.set_protocol_hash(request.protocol_hash());
  comparison.set_candidate_evaluation_id(candidate.id());
  comparison.set_baseline_evaluation_id(baseline.id());
  return comparison;
}

absl::StatusOr<std::string> ResolveStoredProtocolHash(LeaderboardStore& store, const std::string& text) {
  if (IsSha256Hex(text)) return text;
  const bool prefix = text.size() >= kMinProtocolHashPrefix && IsLowerHex(text);
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<StoredProtocol> found, store.FindProtocols(prefix ? text : "", text));
  if (found.size() == 1) return found.front().hash;
  if (found.empty()) {
    return absl::NotFoundError(absl::StrCat("no stored evaluation is under a protocol named '", text, "'",
                                            prefix ? " or with a hash starting with it" : ""));
  }
  std::vector<std::string> candidates;
  for (const StoredProtocol& protocol : found) candidates.push_back(absl::StrCat(protocol.hash, " (", protocol.name, ")"));
  return absl::InvalidArgumentError(absl::StrCat("protocol '", text, "' is ambiguous; it matches ",
                                                 absl::StrJoin(candidates, ", ")));
}

absl::StatusOr<std::string> ResolveLoadedProtocolHash(LeaderboardStore& store, const v1::Protocol& protocol) {
  const std::string hash = ProtocolHash(protocol);
  if (!protocol.task_definition_hash().empty()) return hash;
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<StoredProtocol> stored, store.ListProtocols());
  std::vector<std::string> pinned;
  for (StoredProtocol& candidate : stored) {
    candidate.protocol.clear_task_definition_hash();
    if (ProtocolHash(candidate.protocol) == hash) pinned.push_back(candidate.hash);
  }
  if (pinned.empty()) return hash;
  if (pinned.size() == 1) return pinned.front();
  return absl::InvalidArgumentError(absl::StrCat(
      "protocol '", protocol.name(), "' was evaluated under ", pinned.size(), " definitions of task '", protocol.task(),
      "' (protocol hashes ", absl::StrJoin(pinned, ", "), "): name one of these hashes"));
}

absl::StatusOr<v1::Evaluation> ResolveStoredEvaluation(LeaderboardStore& store, const std::string& ref,
                                                       const std::string& protocol_hash) {
  absl::StatusOr<v1::Evaluation> by_id = store.Get(ref);
  if (absl::IsNotFound(by_id.status())) {
    ROBOLOOP_ASSIGN_OR_RETURN(std::optional<v1::Evaluation> cached, store.FindCached(protocol_hash, ref));
    if (cached.has_value()) return *std::move(cached);
    absl::StatusOr<std::string> id = EvaluationIdWithPrefix(store, ref);
    if (absl::IsNotFound(id.status())) {
      return absl::NotFoundError(absl::StrCat("'", ref, "' is neither an evaluation id (or a unique prefix of one) nor "
                                              "a checkpoint with a completed evaluation under protocol ",
                                              protocol_hash));
    }
    if (!id.ok()) return id.status();
    by_id = store.Get(*id);
  }
  if (!by_id.ok()) return by_id.status();
  if (by_id->protocol_hash() != protocol_hash) {
    return absl::FailedPreconditionError(absl::StrCat(
        "evaluation ", by_id->id(), " is under protocol ", by_id->protocol_hash(), ", not ", protocol_hash,
        "; results are comparable only under one protocol"));
  }
  if (by_id->status() != v1::EVALUATION_COMPLETED) {
    return absl::FailedPreconditionError(
        absl::StrCat("evaluation ", by_id->id(), " did not complete: ", by_id->failure()));
  }
  return by_id;
}

absl::StatusOr<std::string> ChunkExecutionText(const v1::ChunkExecution& execution) {
  switch (execution.mode()) {
    case v1::ChunkExecution::FULL_CHUNK:
      return std::string("full_chunk");
    case v1::ChunkExecution::RECEDING_HORIZON:
      return absl::StrCat("receding_horizon:", execution.receding_steps());
    case v1::ChunkExecution::TEMPORAL_ENSEMBLE: {
      sim::ChunkExecution parsed;
      parsed.mode = sim::ChunkExecution::Mode::kTemporalEnsemble;
      parsed.ensemble_coefficient = execution.ensemble_coefficient();
      return sim::ChunkExecutionName(parsed);
    }
    default:
      return absl::InvalidArgumentError("the protocol's chunk execution mode is unset");
  }
}

}  // namespace roboloop::eval
