#include "cli/sim.h"

#include <cstdio>
#include <memory>
#include <type_traits>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/data.h"
#include "cli/flags.h"
#include "cli/table.h"
#include "common/fs.h"
#include "common/grpc_server.h"
#include "common/grpc_signals.h"
#include "common/signal_cancellation.h"
#include "common/status.h"
#include "common/store_layout.h"
#include "data/dataset_writer.h"
#include "data/validation_in_child.h"
#include "registry/names.h"
#include "sim/checkpoint_policy.h"
#include "sim/replay.h"
#include "sim/sim_client.h"
#include "sim/sim_grpc_service.h"
#include "sim/sim_service.h"
#include "sim/task_registry.h"
#include "wiring/registry_connection.h"
#include "wiring/serve.h"
#include "wiring/sim_backend.h"
#include "wiring/tasks.h"

namespace roboloop::cli {
namespace {

// Flags of the sim commands.
struct SimFlags {
  std::string sim;                        // remote SimService; empty = in-process
  std::string sim_token_file;             // bearer token for --sim
  std::vector<std::string> task_plugins;  // shared libraries adding tasks
  std::vector<std::string> yaml_tasks;    // declarative task files
  Format format = Format::kTable;
  v1::RolloutRequest rollout;
  v1::CollectRequest collect;
  v1::RelabelRequest relabel;
  std::string register_name;              // register the written dataset under this name
  wiring::RegistryTarget registry;                // where --register registers and checkpoints resolve
  int64_t replay_episode = 0;             // episode index replayed
  std::string expect_hash;                // hex state hash chain the replay must reproduce
  std::string dataset_dir;                // serve sim: Collect/Relabel paths live under it ("" = <root>/datasets)
  ServerFlags server;                     // serve sim
};

// The backend the sim command's flags name, running `policy`.
absl::StatusOr<std::unique_ptr<wiring::SimBackend>> OpenBackend(const SimFlags& flags, const std::string& policy = "") {
  wiring::SimBackendOptions options;
  options.sim = flags.sim;
  options.sim_token_file = flags.sim_token_file;
  options.task_plugins = flags.task_plugins;
  options.yaml_tasks = flags.yaml_tasks;
  options.registry = flags.registry;
  return wiring::SimBackend::Open(options, policy);
}

// The first sentence or clause (up to ". " or ";") of a task's summary, on one line: a YAML
// task's summary is its whole description, often a folded paragraph ending in a newline.
std::string SummaryColumn(const std::string& summary) {
  std::string line = absl::StrJoin(absl::StrSplit(summary, absl::ByAnyChar(" \t\r\n"), absl::SkipEmpty()), " ");
  const size_t sentence_end = line.find(". ");
  const size_t clause_end = line.find(';');
  const size_t end = std::min(sentence_end == std::string::npos ? line.size() : sentence_end + 1, clause_end);
  return line.substr(0, end);
}

// "agentview 84x84 (agentview), top 32x32 (free)" (width x height); "-" for state-only tasks.
std::string CamerasColumn(const v1::TaskInfo& task) {
  std::vector<std::string> cameras;
  for (const v1::CameraObs& c : task.cameras()) {
    cameras.push_back(absl::StrCat(c.name(), " ", c.width(), "x", c.height(), " (",
                                   c.camera().empty() ? "free" : c.camera(), ")"));
  }
  return cameras.empty() ? "-" : absl::StrJoin(cameras, ", ");
}

absl::Status ListTasks(const SimFlags& flags) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto backend, OpenBackend(flags));
  ROBOLOOP_ASSIGN_OR_RETURN(v1::ListTasksResponse tasks, backend->ListTasks());
  if (flags.format == Format::kJson) {
    ROBOLOOP_RETURN_IF_ERROR(PrintProtoJson(tasks, JsonLayout::kOneLine));
    return absl::OkStatus();
  }
  Table table({"TASK", "ACTIONS", "CAMERAS", "MAX STEPS", "DT", "EXPERT", "SUMMARY"});
  for (const v1::TaskInfo& t : tasks.tasks()) {
    table.AddRow({t.name(), absl::StrCat(t.action_low_size()), CamerasColumn(t), absl::StrCat(t.max_steps()),
                  absl::StrFormat("%.3f", t.control_dt()), t.has_expert() ? "yes" : "no", SummaryColumn(t.summary())});
  }
  std::printf("%s", table.Render().c_str());
  return absl::OkStatus();
}

absl::Status Rollout(const SimFlags& flags) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto backend, OpenBackend(flags, flags.rollout.policy()));
  int64_t successes = 0, episodes = 0;
  double total_return = 0;
  Table table({"EPISODE", "SEED", "RETURN", "LENGTH", "SUCCESS", "END", "STATE HASH CHAIN"});
  absl::Status status = backend->Rollout(flags.rollout, [&](const v1::EpisodeRecord& r) {
    ++episodes;
    successes += r.success() ? 1 : 0;
    total_return += r.episode_return();
    if (flags.format == Format::kJson) {
      ROBOLOOP_RETURN_IF_ERROR(PrintProtoJson(r, JsonLayout::kOneLine));
    } else {
      table.AddRow({absl::StrCat(r.episode_index()), absl::StrCat(r.seed()),
                    absl::StrFormat("%.3f", r.episode_return()), absl::StrCat(r.length()),
                    r.success() ? "yes" : "no", r.end_reason(),
                    StateHashHex(r.state_hash_chain())});
    }
    return absl::OkStatus();
  });
  ROBOLOOP_RETURN_IF_ERROR(status);
  if (flags.format == Format::kTable) {
    std::printf("%s", table.Render().c_str());
    std::printf("%lld episodes of %s with %s: success %lld/%lld, mean return %.3f\n",
                static_cast<long long>(episodes), flags.rollout.task().c_str(),
                flags.rollout.policy().c_str(), static_cast<long long>(successes),
                static_cast<long long>(episodes), episodes > 0 ? total_return / episodes : 0.0);
  }
  return absl::OkStatus();
}


void PrintWritten(const char* what, const v1::DatasetWritten& written) {
  std::printf("%s %s: %lld demos, %lld steps, sha256 %s\n", what, written.path().c_str(),
              static_cast<long long>(written.episodes_written()),
              static_cast<long long>(written.total_steps()), written.sha256().c_str());
}

// Before any work: --register's NAME must be a valid dataset name (a usage error otherwise) and
// the registry must answer; OK without --register.
absl::Status CheckRegisterTarget(const SimFlags& flags) {
  if (flags.register_name.empty()) return absl::OkStatus();
  const absl::Status name = registry::ValidateName("dataset", flags.register_name);
  if (!name.ok()) return UsageError(absl::StrCat("--register: ", name.message()));
  ROBOLOOP_ASSIGN_OR_RETURN(auto connection, wiring::RegistryConnection::Open(flags.registry));
  const absl::Status reached = connection->client().GetDataset(absl::StrCat(flags.register_name, "@latest")).status();
  if (reached.ok() || reached.code() == absl::StatusCode::kNotFound) return absl::OkStatus();
  return Annotate(reached, "--register: checking the registry before any work");
}

// Before any work: the folder of a local output file (a sim service's own is the service's to check).
absl::Status CheckLocalOutputFolder(const SimFlags& flags, const std::string& output) {
  return flags.sim.empty() ? data::CheckOutputFolder(output) : absl::OkStatus();
}

// `status` with, for an unknown task of a local command, how to name the tasks of YAML files and plug-ins (which the
// embedded simulation knows only from --task-yaml and --task-plugin).
absl::Status WithTaskSourceHint(const absl::Status& status, const SimFlags& flags) {
  if (!absl::IsNotFound(status) || !flags.sim.empty() || !absl::StrContains(status.message(), "unknown task '")) {
    return status;
  }
  absl::Status hinted(status.code(), absl::StrCat(status.message(),
                                                 " (a task declared in a YAML file needs --task-yaml FILE, one a "
                                                 "plug-in adds --task-plugin LIBRARY)"));
  status.ForEachPayload([&hinted](absl::string_view url, const absl::Cord& payload) { hinted.SetPayload(url, payload); });
  return hinted;
}

absl::Status Collect(const SimFlags& flags) {
  ROBOLOOP_RETURN_IF_ERROR(CheckLocalOutputFolder(flags, flags.collect.output_path()));
  ROBOLOOP_RETURN_IF_ERROR(CheckRegisterTarget(flags));
  ROBOLOOP_ASSIGN_OR_RETURN(auto backend, OpenBackend(flags, flags.collect.rollout().policy()));
  common::CancellationToken cancel;
  ROBOLOOP_ASSIGN_OR_RETURN(auto signals, common::SignalCancellation::Create(&cancel));
  absl::StatusOr<v1::DatasetWritten> collected = backend->Collect(flags.collect, &cancel);
  signals.reset();
  if (cancel.IsCancelled()) {
    return WithExitCode(absl::CancelledError(absl::StrCat("collect cancelled; ", flags.collect.output_path(),
                                                          " was not written")),
                        kExitCancelled);
  }
  ROBOLOOP_ASSIGN_OR_RETURN(v1::DatasetWritten written, std::move(collected));
  PrintWritten("collected", written);
  std::printf("%lld episodes run, %lld successful\n", static_cast<long long>(written.episodes_run()),
              static_cast<long long>(written.successes()));
  if (flags.register_name.empty()) return absl::OkStatus();
  return RegisterDatasetFile(flags.registry, written.path(), flags.register_name);
}

absl::Status Relabel(const SimFlags& flags) {
  // A local input file is checked in a child process first (a remote service's file is its own).
  if (flags.sim.empty() && !flags.relabel.input_path().empty()) {
    ROBOLOOP_RETURN_IF_ERROR(data::ScreenFileInChildProcess(flags.relabel.input_path()));
  }
  ROBOLOOP_RETURN_IF_ERROR(CheckLocalOutputFolder(flags, flags.relabel.output_path()));
  ROBOLOOP_RETURN_IF_ERROR(CheckRegisterTarget(flags));
  ROBOLOOP_ASSIGN_OR_RETURN(auto backend, OpenBackend(flags));
  ROBOLOOP_ASSIGN_OR_RETURN(v1::DatasetWritten written, backend->Relabel(flags.relabel));
  PrintWritten("relabelled", written);
  if (flags.register_name.empty()) return absl::OkStatus();
  return RegisterDatasetFile(flags.registry, written.path(), flags.register_name);
}

// Re-runs one episode locally, checks its state hash chain against --expect-hash, then
// replays it once more against the first run's record (sim/replay.h), bit for bit.
absl::Status Replay(const SimFlags& flags) {
  uint64_t expected = 0;
  if (!absl::SimpleHexAtoi(flags.expect_hash, &expected)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "usage: --expect-hash '", flags.expect_hash, "' is not a hexadecimal hash (see STATE HASH CHAIN of sim rollout)"));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(auto tasks, wiring::TaskRegistryWith(flags.task_plugins, flags.yaml_tasks));
  const v1::RolloutRequest& r = flags.rollout;
  ROBOLOOP_ASSIGN_OR_RETURN(auto task, tasks->Create(r.task()));
  ROBOLOOP_ASSIGN_OR_RETURN(auto policy, sim::MakeNamedPolicy(r.policy(), r.policy_seed(), *task));
  sim::RolloutOptions options;
  options.base_seed = r.base_seed();
  options.first_episode = flags.replay_episode;
  options.max_steps = r.max_steps();
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<sim::EpisodeRecord> records, sim::RunRollout(*task, *policy, options));
  const sim::EpisodeRecord& record = records.front();
  if (record.state_hash_chain != expected) {
    return absl::DataLossError(absl::StrFormat(
        "episode %d of %s with %s (seed %d): state hash chain %016x, expected %016x",
        record.episode_index, r.task(), r.policy(), r.base_seed(), record.state_hash_chain, expected));
  }
  ROBOLOOP_RETURN_IF_ERROR(sim::ReplayEpisode(*task, *policy, options, record));
  std::printf("episode %lld of %s replayed bit for bit: state hash chain %016llx, return %.3f, %s\n",
              static_cast<long long>(record.episode_index), r.task().c_str(),
              static_cast<unsigned long long>(record.state_hash_chain), record.episode_return,
              record.success ? "success" : "no success");
  return absl::OkStatus();
}

absl::Status ServeSim(const SimFlags& flags) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto signals, common::ShutdownSignals::Create());
  ROBOLOOP_ASSIGN_OR_RETURN(auto tasks, wiring::TaskRegistryWith(flags.task_plugins, flags.yaml_tasks));
  sim::SimServiceHandler::Options options;
  options.registry = tasks.get();
  options.dataset_dir =
      flags.dataset_dir.empty() ? StoreLayout(flags.registry.root).ServiceDatasets() : flags.dataset_dir;
  ROBOLOOP_RETURN_IF_ERROR(MakeDirs(options.dataset_dir));
  ROBOLOOP_ASSIGN_OR_RETURN(auto registry, wiring::RegistryConnection::Open(flags.registry));
  options.checkpoints = &registry->client();
  options.checkpoint_cache_dir = StoreLayout(flags.registry.root).PolicyCache();
  options.screen_dataset = data::ProgramFileScreen(kThisProgram);
  ROBOLOOP_ASSIGN_OR_RETURN(auto handler, sim::SimServiceHandler::Create(options));
  sim::SimGrpcService service(handler.get(), {});
  ROBOLOOP_ASSIGN_OR_RETURN(auto server, common::GrpcServer::Create(ServerOptionsFrom(flags.server), {&service}));
  wiring::ServeUntilShutdown(*server, *signals, "sim", absl::StrCat(" ", tasks->Names().size(), " tasks"));
  return absl::OkStatus();
}

void AddTaskSourceOptions(CLI::App* command, SimFlags* flags) {
  command->add_option("--task-plugin", flags->task_plugins,
                      "Shared library adding tasks, a path (a bare name is a file here; repeatable)");
  command->add_option("--task-yaml", flags->yaml_tasks, "Declarative task YAML (repeatable)");
  AddPluginCallTimeoutFlag(command);
}

void AddRemoteOptions(CLI::App* command, SimFlags* flags) {
  command->add_option("--sim", flags->sim, "Remote SimService HOST:PORT or unix:PATH");
  command->add_option("--sim-token-file", flags->sim_token_file, "Bearer token file for --sim");
}

// Accepts what sim::ParseChunkExecution reads, whatever the policy.
CLI::Validator ChunkExecutionText() {
  return CLI::Validator(
      [](std::string& text) {
        const absl::StatusOr<sim::ChunkExecution> parsed = sim::ParseChunkExecution(text);
        return parsed.ok() ? std::string() : std::string(parsed.status().message());
      },
      "EXECUTION");
}

// Accepts a whole number of type T (absl::SimpleAtoi) that is at least `min`.
template <typename T>
CLI::Validator WholeNumberAtLeast(T min) {
  return CLI::Validator(
      [min](std::string& text) {
        T value{};
        if (absl::SimpleAtoi(text, &value) && value >= min) return std::string();
        return absl::StrCat("'", text, "' is not a whole number >= ", min,
                            std::is_unsigned_v<T> ? " that fits 64 bits" : "");
      },
      absl::StrCat("INT>=", min));
}

// --task, --policy, --seed, --max-steps of a rollout request.
void AddTaskPolicyOptions(CLI::App* command, v1::RolloutRequest* r) {
  command->add_option_function<std::string>("--task", [r](const std::string& v) { r->set_task(v); },
                                            "Task name")->required();
  command->add_option_function<std::string>("--policy", [r](const std::string& v) { r->set_policy(v); },
                                            "expert, random or a checkpoint reference (model@alias, model:vN, id)")
      ->required();
  command->add_option_function<std::string>(
      "--chunk-execution", [r](const std::string& v) { r->set_chunk_execution(v); },
      "Checkpoints: full_chunk (default), receding_horizon:N or temporal_ensembling:m")
      ->check(ChunkExecutionText());
  command->add_option_function<uint64_t>("--seed", [r](uint64_t v) { r->set_base_seed(v); },
                                         "Base seed, 0..2^64-1 (episode i uses EpisodeSeed(seed, i))")
      ->check(WholeNumberAtLeast<uint64_t>(0));
  command->add_option_function<int>("--max-steps", [r](int v) { r->set_max_steps(v); },
                                    "Horizon override in env steps, >= 1 (default: the task's max steps)")
      ->check(WholeNumberAtLeast<int>(1));
}

// --episodes, --first-episode, --envs, --threads of a rollout request.
void AddSeedRangeOptions(CLI::App* command, v1::RolloutRequest* r) {
  command->add_option_function<int64_t>("--episodes", [r](int64_t v) { r->set_num_episodes(v); },
                                        "Number of episodes, >= 1")
      ->required()
      ->check(WholeNumberAtLeast<int64_t>(1));
  command->add_option_function<int64_t>("--first-episode", [r](int64_t v) { r->set_first_episode(v); },
                                        "First episode index of the seed range, >= 0")
      ->check(WholeNumberAtLeast<int64_t>(0));
  command->add_option_function<int>("--envs", [r](int v) { r->set_envs(v); }, "Envs stepped together, >= 1 (default 1)")
      ->check(WholeNumberAtLeast<int>(1));
  command->add_option_function<int>("--threads", [r](int v) { r->set_threads(v); }, "Physics threads, >= 1 (default 1)")
      ->check(WholeNumberAtLeast<int>(1));
  command->add_flag_function(
      "--overlap-inference", [r](int64_t count) { r->set_overlap_inference(count > 0); },
      "With --threads > 1: run the policy on half the envs while the other half steps");
}

// --register NAME and where the registry is.
void AddRegisterOptions(CLI::App* command, SimFlags* flags) {
  command->add_option("--register", flags->register_name,
                      "Register the written dataset under NAME (the file is read locally)");
  AddRegistryTargetFlags(command, &flags->registry);
}

std::shared_ptr<SimFlags> SharedFlags() {
  static auto flags = std::make_shared<SimFlags>();
  return flags;
}

}  // namespace

void AddSimCommands(CLI::App& app, CommandRunner& runner) {
  std::shared_ptr<SimFlags> flags = SharedFlags();
  SimFlags* f = flags.get();
  CLI::App* sim = app.add_subcommand("sim", "Batched MuJoCo simulation: tasks, rollouts, datasets, replay");
  sim->require_subcommand(1);

  CLI::App* tasks = sim->add_subcommand("tasks", "List the tasks");
  AddTaskSourceOptions(tasks, f);
  AddRemoteOptions(tasks, f);
  AddFormatOption(tasks, &f->format);
  runner.Bind(tasks, [flags] { return ListTasks(*flags); });

  CLI::App* rollout = sim->add_subcommand("rollout", "Run episodes of a task with a policy");
  AddTaskSourceOptions(rollout, f);
  AddRemoteOptions(rollout, f);
  AddFormatOption(rollout, &f->format);
  AddTaskPolicyOptions(rollout, &f->rollout);
  AddSeedRangeOptions(rollout, &f->rollout);
  AddRegistryTargetFlags(rollout, &f->registry);
  runner.Bind(rollout, [flags] { return WithTaskSourceHint(Rollout(*flags), *flags); });

  CLI::App* collect = sim->add_subcommand(
      "collect", "Run a policy and write its episodes (with full states) as a robomimic dataset");
  AddTaskSourceOptions(collect, f);
  AddRemoteOptions(collect, f);
  AddTaskPolicyOptions(collect, f->collect.mutable_rollout());
  AddSeedRangeOptions(collect, f->collect.mutable_rollout());
  v1::CollectRequest* c = &f->collect;
  collect->add_option_function<std::string>("-o,--output", [c](const std::string& v) { c->set_output_path(v); },
                                            "Dataset file to write (on the sim server with --sim)")->required();
  collect->add_flag_function("--success-only", [c](int64_t n) { c->set_success_only(n > 0); },
                             "Keep only successful episodes");
  collect->add_flag_function("--overwrite", [c](int64_t n) { c->set_overwrite(n > 0); },
                             "Replace an existing output file");
  AddRegisterOptions(collect, f);
  runner.Bind(collect, [flags] { return WithTaskSourceHint(Collect(*flags), *flags); });

  CLI::App* relabel = sim->add_subcommand(
      "relabel", "DAgger: a copy of a dataset whose actions are the expert's for each recorded state");
  AddTaskSourceOptions(relabel, f);
  AddRemoteOptions(relabel, f);
  v1::RelabelRequest* l = &f->relabel;
  relabel->add_option_function<std::string>("IN", [l](const std::string& v) { l->set_input_path(v); },
                                            "Dataset with states")->required();
  relabel->add_option_function<std::string>("-o,--output", [l](const std::string& v) { l->set_output_path(v); },
                                            "Dataset file to write")->required();
  relabel->add_option_function<std::string>("--task", [l](const std::string& v) { l->set_task(v); },
                                            "Task whose expert relabels (default: env_args env_name of IN)");
  relabel->add_flag_function("--overwrite", [l](int64_t n) { l->set_overwrite(n > 0); },
                             "Replace an existing output file");
  AddRegisterOptions(relabel, f);
  runner.Bind(relabel, [flags] { return WithTaskSourceHint(Relabel(*flags), *flags); });

  CLI::App* replay = sim->add_subcommand(
      "replay", "Re-run one episode and verify its state hash chain bit for bit");
  AddTaskSourceOptions(replay, f);
  AddTaskPolicyOptions(replay, &f->rollout);
  replay->add_option("--episode", f->replay_episode, "Episode index within the seed range")->required();
  replay->add_option("--expect-hash", f->expect_hash, "STATE HASH CHAIN shown by sim rollout (hex)")
      ->required();
  runner.Bind(replay, [flags] { return WithTaskSourceHint(Replay(*flags), *flags); });
}

void AddServeSimCommand(CLI::App* serve, CommandRunner& runner) {
  std::shared_ptr<SimFlags> flags = SharedFlags();
  SimFlags* f = flags.get();
  CLI::App* command = serve->add_subcommand("sim", "Run SimService");
  AddTaskSourceOptions(command, f);
  AddServerFlags(command, &f->server, "127.0.0.1:7072");
  command->add_option("--dataset-dir", f->dataset_dir,
                      "Collect/Relabel paths are relative to this directory and must stay inside it "
                      "(default: <root>/datasets)");
  AddRegistryTargetFlags(command, &f->registry);
  runner.Bind(command, [flags] { return ServeSim(*flags); });
}

}  // namespace roboloop::cli
