#include "cli/eval_run.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/flags.h"
#include "cli/sim.h"
#include "common/fs.h"
#include "common/grpc_server.h"
#include "common/ids.h"
#include "common/grpc_signals.h"
#include "common/status.h"
#include "common/store_layout.h"
#include "eval/eval_grpc_service.h"
#include "eval/eval_service.h"
#include "eval/metrics.h"
#include "eval/promotion.h"
#include "eval/protocol.h"
#include "sim/checkpoint_policy.h"
#include "sim/sim_client.h"
#include "sim/sim_service.h"
#include "wiring/eval_stack.h"
#include "wiring/registry_connection.h"
#include "wiring/serve.h"

namespace roboloop::cli {
namespace {

// Flags of `eval`, `promote` and `serve eval`, filled by CLI11 before the action runs.
struct EvalRunFlags {
  wiring::RegistryTarget registry;                 // checkpoints; its root also holds the leaderboard
  std::string protocols_dir = eval::kDefaultProtocolsDir;
  std::string checkpoint;                  // eval: the checkpoint reference
  std::string model;                       // promote: the model
  std::string candidate;                   // promote: candidate reference (default MODEL@latest)
  std::string protocol;                    // protocol name or YAML path
  std::string task;                        // eval: ad-hoc protocol on this task
  int64_t episodes = 50;                   // ad-hoc protocol: episodes
  uint64_t seed = 0;                       // ad-hoc protocol: base seed
  int64_t first_episode = 0;               // ad-hoc protocol: seed_start
  int max_steps = 0;                       // ad-hoc protocol: horizon (0 = the task's)
  std::string chunk_execution = "full_chunk";  // ad-hoc protocol: chunk execution
  std::vector<std::string> sims;           // sim endpoints; empty = embedded
  std::vector<std::string> task_plugins;   // tasks the embedded sim service adds: shared libraries
  std::vector<std::string> yaml_tasks;     // tasks the embedded sim service adds: declarative files
  std::string sim_token_file;              // bearer token for --sim
  int shards_per_endpoint = 2;
  int envs = 4;
  bool force = false;
  double alpha = 0.05;
  Format format = Format::kTable;
  ServerFlags server;                      // serve eval
};

// The evaluation stack `f` describes.
wiring::EvalStackOptions StackOptions(const EvalRunFlags& f) {
  wiring::EvalStackOptions options;
  options.registry = f.registry;
  options.protocols_dir = f.protocols_dir;
  options.sims = f.sims;
  options.task_plugins = f.task_plugins;
  options.yaml_tasks = f.yaml_tasks;
  options.sim_token_file = f.sim_token_file;
  options.shards_per_endpoint = f.shards_per_endpoint;
  options.envs = f.envs;
  return options;
}

absl::StatusOr<v1::ChunkExecution> ChunkExecutionFromText(const std::string& text) {
  absl::StatusOr<sim::ChunkExecution> parsed = sim::ParseChunkExecution(text);
  if (!parsed.ok()) return UsageError(absl::StrCat("--chunk-execution: ", parsed.status().message()));
  v1::ChunkExecution execution;
  switch (parsed->mode) {
    case sim::ChunkExecution::Mode::kFullChunk:
      execution.set_mode(v1::ChunkExecution::FULL_CHUNK);
      break;
    case sim::ChunkExecution::Mode::kRecedingHorizon:
      execution.set_mode(v1::ChunkExecution::RECEDING_HORIZON);
      execution.set_receding_steps(parsed->receding_steps);
      break;
    case sim::ChunkExecution::Mode::kTemporalEnsemble:
      execution.set_mode(v1::ChunkExecution::TEMPORAL_ENSEMBLE);
      execution.set_ensemble_coefficient(parsed->ensemble_coefficient);
      break;
  }
  return execution;
}

// The task's horizon as the first endpoint serves it; 0 when the task is unknown there (the
// protocol's validation then names the known tasks).
absl::StatusOr<int> TaskHorizon(const EvalRunFlags& f, const std::string& endpoint) {
  common::GrpcChannelOptions channel;
  channel.target = endpoint;
  channel.token_file = f.sims.empty() ? "" : f.sim_token_file;
  ROBOLOOP_ASSIGN_OR_RETURN(auto client, sim::SimClient::Connect(channel));
  ROBOLOOP_ASSIGN_OR_RETURN(v1::ListTasksResponse tasks, client->ListTasks());
  for (const v1::TaskInfo& task : tasks.tasks()) {
    if (task.name() == f.task) return task.max_steps();
  }
  return 0;
}

// The protocol of --protocol, or the ad-hoc one of --task and its options.
absl::StatusOr<v1::Protocol> ProtocolFromFlags(const EvalRunFlags& f, wiring::EvalStack& stack) {
  if (f.protocol.empty() == f.task.empty()) return UsageError("give exactly one of --protocol P and --task T");
  if (!f.protocol.empty()) return eval::LoadProtocol(f.protocol, f.protocols_dir);
  v1::Protocol protocol;
  protocol.set_name(absl::StrCat(f.task, "-adhoc"));
  protocol.set_task(f.task);
  protocol.set_base_seed(f.seed);
  protocol.set_seed_start(f.first_episode);
  protocol.set_episodes(f.episodes);
  protocol.set_max_steps(f.max_steps);
  if (f.max_steps == 0) {
    ROBOLOOP_ASSIGN_OR_RETURN(int horizon, TaskHorizon(f, stack.endpoints().front()));
    protocol.set_max_steps(horizon);
  }
  ROBOLOOP_ASSIGN_OR_RETURN(*protocol.mutable_execution()->mutable_chunk(), ChunkExecutionFromText(f.chunk_execution));
  return protocol;
}


std::string RateText(const v1::RateEstimate& r) {
  return absl::StrFormat("%.2f [%.2f, %.2f] (%d/%d)", r.rate(), r.interval().low(), r.interval().high(),
                         r.successes(), r.trials());
}

void PrintEvaluation(const v1::Evaluation& e, bool cached) {
  const v1::Protocol& p = e.protocol();
  const v1::Aggregates& a = e.aggregates();
  std::printf("evaluation  %s%s\n", e.id().c_str(), cached ? " (cached; --force runs it again)" : "");
  std::printf("checkpoint  %s:v%d %s\n", e.model().c_str(), e.model_version(), e.checkpoint_id().c_str());
  std::printf("protocol    %s (%s): %s, base seed %llu, episodes [%lld, %lld), max steps %d\n", p.name().c_str(),
              e.protocol_hash().substr(0, 12).c_str(), p.task().c_str(), static_cast<unsigned long long>(p.base_seed()),
              static_cast<long long>(p.seed_start()), static_cast<long long>(p.seed_start() + p.episodes()),
              p.max_steps());
  std::printf("success     %s\n", RateText(a.success()).c_str());
  std::printf("return      %.3f [%.3f, %.3f]\n", a.episode_return().mean(), a.episode_return().interval().low(),
              a.episode_return().interval().high());
  std::printf("length      mean %.1f, min %d, max %d\n", a.length().mean(), a.length().min(), a.length().max());
  std::vector<std::string> reasons;
  for (const auto& [reason, count] : a.end_reasons()) reasons.push_back(absl::StrCat(reason, " ", count));
  std::sort(reasons.begin(), reasons.end());
  std::printf("end         %s\n", absl::StrJoin(reasons, ", ").c_str());
}

absl::Status Evaluate(const EvalRunFlags& f) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto stack, wiring::EvalStack::Open(StackOptions(f)));
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Protocol protocol, ProtocolFromFlags(f, *stack));
  v1::EvaluateRequest request;
  request.set_checkpoint_ref(f.checkpoint);
  *request.mutable_protocol() = protocol;
  request.set_force(f.force);
  bool cached = false;
  const bool tty = isatty(STDERR_FILENO) != 0;
  auto progress = [&](const v1::EvaluateProgress& p) {
    cached = p.cached();
    if (tty && !p.cached()) {
      std::fprintf(stderr, "\r%lld/%lld episodes, %lld successes", static_cast<long long>(p.episodes_done()),
                   static_cast<long long>(p.episodes_total()), static_cast<long long>(p.successes()));
    }
    return absl::OkStatus();
  };
  absl::StatusOr<v1::Evaluation> evaluation = stack->handler().Evaluate(request, CurrentUser(), progress, nullptr);
  if (tty) std::fprintf(stderr, "\n");
  ROBOLOOP_RETURN_IF_ERROR(evaluation.status());
  if (f.format == Format::kJson) {
    ROBOLOOP_RETURN_IF_ERROR(PrintProtoJson(*evaluation, JsonLayout::kIndented, JsonDefaults::kPrinted));
  } else {
    PrintEvaluation(*evaluation, cached);
  }
  return absl::OkStatus();
}

absl::Status Promote(const EvalRunFlags& f) {
  ROBOLOOP_RETURN_IF_ERROR(CheckAlphaFlag("--alpha", f.alpha));
  v1::PromoteCandidateRequest request;
  request.set_model(f.model);
  request.set_candidate(f.candidate);
  request.set_protocol_name(f.protocol);
  request.set_alpha(f.alpha);
  ROBOLOOP_ASSIGN_OR_RETURN(eval::PromotionRequest promotion,
                            eval::PromotionRequestFrom(request, f.protocols_dir, StoreLayout(f.registry.root).DatasetCache()));
  promotion.requested_by = CurrentUser();
  ROBOLOOP_ASSIGN_OR_RETURN(auto stack, wiring::EvalStack::Open(StackOptions(f)));
  ROBOLOOP_ASSIGN_OR_RETURN(eval::PromotionOutcome outcome,
                            eval::PromoteIfBetter(stack->handler(), stack->registry(), promotion));
  std::printf("candidate  %s (evaluation %s): success %s\n", outcome.candidate_id.c_str(),
              outcome.candidate.id().c_str(), RateText(outcome.candidate.aggregates().success()).c_str());
  if (outcome.champion.has_value()) {
    std::printf("champion   %s (evaluation %s): success %s\n", outcome.champion_id.c_str(),
                outcome.champion->id().c_str(), RateText(outcome.champion->aggregates().success()).c_str());
  }
  if (outcome.comparison.has_value()) {
    std::printf("verdict    %s\n", eval::VerdictName(outcome.comparison->verdict()));
  }
  std::printf("%s %s@%s: %s\n", outcome.promoted ? "promoted" : "not promoted;", f.model.c_str(),
              eval::kChampionAlias, outcome.reason.c_str());
  return absl::OkStatus();
}

absl::Status ServeEval(const EvalRunFlags& f) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto signals, common::ShutdownSignals::Create());
  ROBOLOOP_ASSIGN_OR_RETURN(auto stack, wiring::EvalStack::Open(StackOptions(f)));
  eval::EvalGrpcService::Options service_options;
  service_options.registry = &stack->registry();
  service_options.dataset_cache_dir = StoreLayout(f.registry.root).DatasetCache();
  eval::EvalGrpcService service(&stack->handler(), service_options);
  ROBOLOOP_ASSIGN_OR_RETURN(auto server, common::GrpcServer::Create(ServerOptionsFrom(f.server), {&service}));
  wiring::ServeUntilShutdown(*server, *signals, "eval",
                             absl::StrCat(" (sim endpoints ", absl::StrJoin(stack->endpoints(), ", "), ")"));
  return absl::OkStatus();
}

void AddSimEndpointOptions(CLI::App* command, EvalRunFlags* f) {
  CLI::Option* sim = command->add_option("--sim", f->sims,
                                         "SimService endpoint HOST:PORT or unix:PATH (repeatable; default: "
                                         "embedded); a served EvalService dials only these, whatever a request names");
  command->add_option("--sim-token-file", f->sim_token_file, "Bearer token file for --sim");
  // A remote sim service loads its own tasks (`roboloop serve sim --task-plugin|--task-yaml`).
  command->add_option("--task-plugin", f->task_plugins,
                      "Embedded sim service: shared library adding tasks, a path (repeatable)")
      ->excludes(sim);
  command->add_option("--task-yaml", f->yaml_tasks, "Embedded sim service: declarative task YAML (repeatable)")
      ->excludes(sim);
  command->add_option("--shards-per-endpoint", f->shards_per_endpoint, "Seed-range shards per sim endpoint")
      ->capture_default_str();
  command->add_option("--envs", f->envs, "Envs per shard rollout")->capture_default_str();
  command->add_option("--protocols-dir", f->protocols_dir, "Where named protocols live")->capture_default_str();
}

void AddEvalCommand(CLI::App& app, CommandRunner& runner, const std::shared_ptr<EvalRunFlags>& f) {
  CLI::App* command = app.add_subcommand("eval", "Evaluate a checkpoint under a protocol (stored in the leaderboard)");
  command->add_option("REF", f->checkpoint, "Checkpoint reference (id, model:vN, model@alias)")->required();
  command->add_option("--protocol", f->protocol, "Protocol name (under --protocols-dir) or YAML path");
  command->add_option("--task", f->task, "Ad-hoc protocol on this task (instead of --protocol)");
  command->add_option("--episodes", f->episodes, "Ad-hoc protocol: episodes")->capture_default_str();
  command->add_option("--seed", f->seed, "Ad-hoc protocol: base seed")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command->add_option("--first-episode", f->first_episode, "Ad-hoc protocol: first episode index")
      ->capture_default_str();
  command->add_option("--max-steps", f->max_steps, "Ad-hoc protocol: horizon (default: the task's)");
  command->add_option("--chunk-execution", f->chunk_execution,
                      "Ad-hoc protocol: full_chunk, receding_horizon:N or temporal_ensembling:m")
      ->capture_default_str();
  command->add_flag("--force", f->force, "Evaluate again although a cached evaluation exists");
  AddSimEndpointOptions(command, f.get());
  AddRegistryTargetFlags(command, &f->registry);
  AddFormatOption(command, &f->format);
  runner.Bind(command, [f] { return Evaluate(*f); });
}

void AddPromoteCommand(CLI::App& app, CommandRunner& runner, const std::shared_ptr<EvalRunFlags>& f) {
  CLI::App* command = app.add_subcommand(
      "promote", "Move MODEL@champion to a candidate that is better than the champion under a protocol");
  command->add_option("MODEL", f->model, "Registry model")->required();
  command->add_option("--protocol", f->protocol, "Gate protocol name or YAML path")->required();
  command->add_option("--candidate", f->candidate, "Candidate checkpoint (default: MODEL@latest)");
  command->add_option("--alpha", f->alpha, "Significance level of the paired comparison")->capture_default_str();
  AddSimEndpointOptions(command, f.get());
  AddRegistryTargetFlags(command, &f->registry);
  runner.Bind(command, [f] { return Promote(*f); });
}

}  // namespace

absl::Status CheckAlphaFlag(const char* flag, double alpha) {
  const absl::Status checked = eval::CheckAlpha(alpha);
  return checked.ok() ? checked : UsageError(absl::StrCat(flag, ": ", checked.message()));
}

void AddEvaluateCommands(CLI::App& app, CommandRunner& runner) {
  AddEvalCommand(app, runner, std::make_shared<EvalRunFlags>());
  AddPromoteCommand(app, runner, std::make_shared<EvalRunFlags>());
}

void AddServeEvalCommand(CLI::App* serve, CommandRunner& runner) {
  auto f = std::make_shared<EvalRunFlags>();
  CLI::App* command = serve->add_subcommand("eval", "Run EvalService");
  AddServerFlags(command, &f->server, "127.0.0.1:7074");
  AddRegistryTargetFlags(command, &f->registry);
  AddSimEndpointOptions(command, f.get());
  runner.Bind(command, [f] { return ServeEval(*f); });
}

}  // namespace roboloop::cli
