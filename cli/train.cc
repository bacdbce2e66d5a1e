#include "cli/train.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/flags.h"
#include "cli/usage_hints.h"
#include "common/cancellation.h"
#include "common/config.h"
#include "common/grpc_server.h"
#include "common/grpc_signals.h"
#include "common/ids.h"
#include "common/signal_cancellation.h"
#include "common/status.h"
#include "common/store_layout.h"
#include "data/lerobot_runtime.h"
#include "train/checkpoint_config.h"
#include "train/dataset_set.h"
#include "train/launcher.h"
#include "train/sample_trace.h"
#include "train/train_config_check.h"
#include "train/train_job.h"
#include "train/train_progress.h"
#include "train/train_run.h"
#include "train/train_service.h"
#include "wiring/registry_connection.h"
#include "wiring/serve.h"

namespace roboloop::cli {
namespace {

constexpr char kDatasetFlag[] = "--dataset";  // HDF5 files, folders, glob patterns or registry references

// `roboloop train`: the job its flags describe and its own command line (which local ranks
// re-run, global flags included).
struct TrainCommand {
  train::TrainJob job;
  std::vector<std::string> argv;
};

// A LeRobot folder given as a dataset (a path: DatasetEntryIsPath) becomes its import, cached
// under the store by content.
absl::Status ImportLeRobotDatasets(const std::string& root, v1::TrainConfig* config) {
  const std::string cache = StoreLayout(root).DatasetCache();
  return train::MapDatasetEntries(config, [&](const std::string& entry) -> absl::StatusOr<std::string> {
    if (!train::DatasetEntryIsPath(entry) || !data::IsLeRobotFolder(entry)) return entry;
    ROBOLOOP_ASSIGN_OR_RETURN(const data::LeRobotApi* lerobot, data::LoadLeRobot());
    return lerobot->import_lerobot_cached(entry, cache);
  });
}

// The config file with the flags on top (defaults not filled: zero/empty = not given).
absl::StatusOr<v1::TrainConfig> GivenConfig(const train::TrainJob& job) {
  v1::TrainConfig config;
  if (!job.config_path.empty()) ROBOLOOP_RETURN_IF_ERROR(LoadYamlFile(job.config_path, &config));
  // --dataset flags replace the file's datasets rather than add to them.
  if (!job.overrides.dataset().empty()) config.clear_datasets();
  config.MergeFrom(job.overrides);
  ROBOLOOP_RETURN_IF_ERROR(ImportLeRobotDatasets(job.root, &config));
  return config;
}

// The checkpoint a config starts from: its --resume, else its --init-from ("" = none).
std::string CheckpointRef(const v1::TrainConfig& config) {
  return config.resume().empty() ? config.init_from() : config.resume();
}

// The run's config: the given one, completed by its --resume or --init-from checkpoint
// (ApplyCheckpointConfig, through `registry`, which may be null when there is none), with the
// defaults filled and the numbers and the steps left checked.
absl::StatusOr<v1::TrainConfig> EffectiveConfig(const train::TrainJob& job, registry::RegistryClient* registry) {
  ROBOLOOP_ASSIGN_OR_RETURN(v1::TrainConfig config, GivenConfig(job));
  const std::string ref = CheckpointRef(config);
  v1::Checkpoint checkpoint;
  if (!ref.empty()) {
    ROBOLOOP_CHECK(registry != nullptr);
    absl::StatusOr<v1::Checkpoint> fetched = registry->GetCheckpoint(ref);
    if (!fetched.ok()) return Annotate(fetched.status(), absl::StrCat("checkpoint ", ref));
    checkpoint = *std::move(fetched);
    ROBOLOOP_ASSIGN_OR_RETURN(config, train::ApplyCheckpointConfig(config, checkpoint));
  }
  config = train::WithDefaults(config);
  ROBOLOOP_RETURN_IF_ERROR(train::CheckTrainConfig(config));
  ROBOLOOP_RETURN_IF_ERROR(train::CheckStepsLeft(config, checkpoint));
  return config;
}

wiring::RegistryTarget RegistryTargetOf(const train::TrainJob& job) {
  wiring::RegistryTarget target;
  target.address = job.registry_address;
  target.root = job.root;
  target.token_file = job.registry_token_file;
  target.tls_ca_file = job.registry_tls_ca_file;
  target.tls_server_name = job.registry_tls_server_name;
  return target;
}

void PrintEvent(const v1::TrainEvent& event) {
  if (event.has_step()) {
    const v1::TrainEvent::Step& s = event.step();
    std::printf("step %lld  loss %.6g  lr %.3g  grad %.3g  %.0f samples/s  stall %.1f%%\n",
                static_cast<long long>(s.step()), s.loss(), s.lr(), s.grad_norm(), s.samples_per_s(),
                s.data_stall_pct());
  } else if (event.has_checkpoint()) {
    std::printf("checkpoint %s:v%d  %s  (step %lld)\n", event.checkpoint().model().c_str(),
                event.checkpoint().version(), event.checkpoint().checkpoint_id().c_str(),
                static_cast<long long>(event.checkpoint().step()));
  } else if (event.has_validation()) {
    std::printf("validation loss %.6g over %lld windows (step %lld)\n", event.validation().loss(),
                static_cast<long long>(event.validation().windows()),
                static_cast<long long>(event.validation().step()));
  } else if (event.has_finished()) {
    std::printf("finished run %s after %lld steps, final loss %.6g, data stall %.1f%%, checkpoint %s\n",
                event.run_id().c_str(), static_cast<long long>(event.finished().steps()),
                event.finished().final_loss(), event.finished().data_stall_pct(),
                event.finished().checkpoint_id().c_str());
  }
}

// Rank 0's events: printed, and written to `progress_fd` (TrainService's pipe) when one is given.
std::function<void(const v1::TrainEvent&)> EventSink(int progress_fd) {
  if (progress_fd < 0) return PrintEvent;
  std::signal(SIGPIPE, SIG_IGN);  // a gone reader is a write error, not the end of training
  auto warned = std::make_shared<bool>(false);
  return [progress_fd, warned](const v1::TrainEvent& event) {
    PrintEvent(event);
    const absl::Status sent = train::WriteTrainEvent(progress_fd, event);
    if (!sent.ok() && !*warned) spdlog::warn("training progress is no longer reported: {}", sent.ToString());
    *warned = *warned || !sent.ok();
  };
}

// A rank that failed after it was cancelled (SIGINT/SIGTERM; typically during the rendezvous, when a
// rank that left breaks it for the others): cancelled, said once by rank 0.
absl::Status CancelledWhileStarting(const absl::Status& failure, const train::RankInfo& rank) {
  const std::string message =
      rank.rank != 0 ? "" : absl::StrCat("training cancelled before it could continue: ", failure.message());
  return WithExitCode(absl::CancelledError(message), kExitCancelled);
}

absl::Status RunRank(const train::TrainJob& job, const train::RankInfo& rank) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto connection, wiring::RegistryConnection::Open(RegistryTargetOf(job)));
  ROBOLOOP_ASSIGN_OR_RETURN(v1::TrainConfig config, EffectiveConfig(job, &connection->client()));
  common::CancellationToken cancel;
  ROBOLOOP_ASSIGN_OR_RETURN(auto signals, common::SignalCancellation::Create(&cancel));
  train::TrainRunOptions options;
  options.config = config;
  options.rank = rank;
  options.root = job.root;
  options.run_id = job.run_id;
  if (const char* run_id = std::getenv("ROBOLOOP_RUN_ID"); options.run_id.empty() && run_id != nullptr) {
    options.run_id = run_id;
  }
  options.registry = &connection->client();
  options.cancel = &cancel;
  if (const char* trace = std::getenv(train::kSampleTraceVariable); trace != nullptr) options.sample_trace_dir = trace;
  if (rank.rank == 0) options.on_event = EventSink(job.progress_fd);
  absl::StatusOr<train::TrainRunResult> run = train::RunTraining(options);
  if (!run.ok() && cancel.IsCancelled()) return CancelledWhileStarting(run.status(), rank);
  ROBOLOOP_ASSIGN_OR_RETURN(train::TrainRunResult result, std::move(run));
  if (!result.cancelled) return absl::OkStatus();
  // Only rank 0 registers checkpoints, so only it has a reference to print; the others exit quietly.
  const std::string message =
      rank.rank != 0 ? ""
                     : absl::StrCat("training cancelled after ", result.steps, " steps; resume with --resume ",
                                    result.checkpoint_id);
  return WithExitCode(absl::CancelledError(message), kExitCancelled);
}

// Usage errors (exit 2) of the merged config: no dataset at all, or both --resume and --init-from.
absl::Status CheckUsage(const v1::TrainConfig& config) {
  // A resumed run's datasets may come from its checkpoint.
  if (config.dataset().empty() && config.datasets().empty() && config.resume().empty()) {
    return UsageError("training needs a dataset: give --dataset (or dataset: in the config file)");
  }
  if (!config.resume().empty() && !config.init_from().empty()) {
    return UsageError("--resume and --init-from exclude each other");
  }
  return absl::OkStatus();
}

// A usage error (exit 2) when CONFIG names an HDF5 file: most likely a second dataset of a pattern the
// shell expanded (`--dataset d*.hdf5` unquoted), which took CONFIG's place.
absl::Status CheckConfigIsNoDataset(const train::TrainJob& job) {
  const std::string& config = job.config_path;
  if (!absl::EndsWith(config, ".hdf5") && !absl::EndsWith(config, ".h5")) return absl::OkStatus();
  const std::string problem = absl::StrCat("CONFIG ", config, " is an HDF5 file, not a YAML TrainConfig");
  if (job.overrides.dataset().empty()) return UsageError(absl::StrCat(problem, ": give datasets with --dataset"));
  std::vector<std::string> files = {job.overrides.dataset()};
  files.insert(files.end(), job.overrides.datasets().begin(), job.overrides.datasets().end());
  files.push_back(config);
  return UsageError(absl::StrCat(problem, "; ", SeveralFilesHint({kDatasetFlag, true, true}, files)));
}

// A run TrainService started (--exit-with-parent <its pid>) is stopped (SIGTERM: it
// checkpoints) when the service dies, so a killed service leaves no training behind.
void ExitWithParentIfAsked(int parent) {
  if (parent == 0) return;
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) std::raise(SIGTERM);
}

absl::Status Train(const TrainCommand& command) {
  const train::TrainJob& job = command.job;
  ROBOLOOP_ASSIGN_OR_RETURN(std::optional<train::RankInfo> rank, train::RankInfoFromEnvironment());
  // A rank's parent is its launcher, which forwards the signals; only the top process watches
  // TrainService.
  if (rank.has_value()) return RunRank(job, *rank);
  ExitWithParentIfAsked(job.exit_with_parent);
  ROBOLOOP_RETURN_IF_ERROR(CheckConfigIsNoDataset(job));
  // Check the config before spawning anything.
  ROBOLOOP_ASSIGN_OR_RETURN(const v1::TrainConfig given, GivenConfig(job));
  ROBOLOOP_RETURN_IF_ERROR(CheckUsage(given));
  if (job.nproc_per_node <= 1) return RunRank(job, train::RankInfo{});
  {  // the launcher reaches the registry only to read a checkpoint the run starts from
    std::unique_ptr<wiring::RegistryConnection> connection;
    if (!CheckpointRef(given).empty()) {
      ROBOLOOP_ASSIGN_OR_RETURN(connection, wiring::RegistryConnection::Open(RegistryTargetOf(job)));
    }
    ROBOLOOP_RETURN_IF_ERROR(EffectiveConfig(job, connection ? &connection->client() : nullptr).status());
  }
  train::LaunchOptions launch;
  launch.argv = command.argv;
  launch.argv[0] = kThisProgram;
  launch.nproc = job.nproc_per_node;
  launch.cancelled_exit_code = kExitCancelled;
  // The ranks share one run id: a new one, unless they resume a run and so each read its id from the checkpoint.
  if (job.run_id.empty() && given.resume().empty()) launch.extra_env.push_back("ROBOLOOP_RUN_ID=" + NewUuid());
  const absl::Status launched = train::LaunchLocalRanks(launch);
  return absl::IsCancelled(launched) ? WithExitCode(launched, kExitCancelled) : launched;
}

// Flags of `serve train`.
struct ServeTrainFlags {
  wiring::RegistryTarget target;
  ServerFlags server;
  std::string dataset_dir;  // where requests' dataset paths resolve ("" = <root>/datasets)
};

absl::Status ServeTrain(const ServeTrainFlags& flags) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto signals, common::ShutdownSignals::Create());
  train::TrainServiceOptions options;
  options.root = flags.target.root;
  options.registry_address = flags.target.address;
  options.registry_token_file = flags.target.token_file;
  options.registry_tls_ca_file = flags.target.tls_ca_file;
  options.registry_tls_server_name = flags.target.tls_server_name;
  options.dataset_dir = flags.dataset_dir.empty() ? StoreLayout(flags.target.root).ServiceDatasets() : flags.dataset_dir;
  train::TrainServiceHandler handler(options);
  train::TrainGrpcService service(&handler);
  ROBOLOOP_ASSIGN_OR_RETURN(auto server, common::GrpcServer::Create(ServerOptionsFrom(flags.server), {&service}));
  wiring::ServeUntilShutdown(*server, *signals, "train");
  return absl::OkStatus();
}

}  // namespace

void AddServeTrainCommand(CLI::App* serve, CommandRunner& runner) {
  auto flags = std::make_shared<ServeTrainFlags>();
  CLI::App* command = serve->add_subcommand("train", "Run TrainService");
  AddServerFlags(command, &flags->server, "127.0.0.1:50053");
  AddRegistryTargetFlags(command, &flags->target);
  command->add_option("--dataset-dir", flags->dataset_dir,
                      "Dataset paths of requests are relative to this directory and must stay inside it (registry "
                      "references are not paths; default: <root>/datasets)");
  runner.Bind(command, [flags] { return ServeTrain(*flags); });
}

void AddTrainCommand(CLI::App& app, CommandRunner& runner, int argc, char** argv) {
  auto command = std::make_shared<TrainCommand>();
  command->argv.assign(argv, argv + argc);
  CLI::App* train = app.add_subcommand(train::kTrainSubcommand, "Train a policy (data-parallel with --nproc-per-node)");
  train::AddTrainJobFlags(train, &command->job);
  runner.MarkTakesPatterns(train->get_option(kDatasetFlag));
  runner.Bind(train, [command] { return Train(*command); });
}

}  // namespace roboloop::cli
