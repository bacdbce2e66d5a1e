#include "cli/train.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <sys/prctl.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "cli/flags.h"
#include "common/config.h"
#include "common/grpc_server.h"
#include "common/grpc_signals.h"
#include "common/ids.h"
#include "common/status.h"
#include "train/launcher.h"
#include "train/train_run.h"
#include "train/train_service.h"
#include "wiring/registry_connection.h"

namespace roboloop::cli {
namespace {

std::atomic<bool> cancel_requested{false};

void RequestCancel(int) { cancel_requested.store(true); }

// Flags of `train`, filled by CLI11 before the action runs. Set flags override the YAML.
struct TrainFlags {
  wiring::RegistryTarget target;
  std::string config_path;
  int nproc_per_node = 1;
  std::vector<std::string> argv;
  v1::TrainConfig overrides;
  bool packing_off = false;
};

void AddConfigFlags(CLI::App* train, TrainFlags* f) {
  v1::TrainConfig* o = &f->overrides;
  train->add_option_function<std::string>("--dataset", [o](const std::string& v) { o->set_dataset(v); },
                                          "Dataset: HDF5 path or registry reference");
  train->add_option_function<std::string>("--model", [o](const std::string& v) { o->set_model(v); },
                                          "Registry model name of the checkpoints (default policy)");
  train->add_option_function<std::string>("--policy", [o](const std::string& v) { o->mutable_policy()->set_kind(v); },
                                          "Policy: mlp or transformer (default transformer)");
  train->add_option_function<int>("--history", [o](int v) { o->mutable_policy()->set_history(v); },
                                  "Observation steps the policy reads");
  train->add_option_function<int>("--chunk", [o](int v) { o->mutable_policy()->set_chunk(v); },
                                  "Actions predicted per call");
  train->add_flag_function("--flow-matching", [o](int64_t n) { o->mutable_policy()->set_flow_matching(n > 0); },
                           "Transformer: flow-matching action head");
  train->add_option_function<int64_t>("--steps", [o](int64_t v) { o->set_steps(v); }, "Optimisation steps");
  train->add_option_function<int>("--batch-size", [o](int v) { o->set_batch_size(v); },
                                  "Samples per rank per step");
  train->add_option_function<uint64_t>("--seed", [o](uint64_t v) { o->set_seed(v); }, "Seed");
  train->add_option_function<double>("--lr", [o](double v) { o->mutable_optimizer()->set_lr(v); },
                                     "Peak learning rate");
  train->add_option_function<int64_t>("--checkpoint-every", [o](int64_t v) { o->set_checkpoint_every(v); },
                                      "Register a checkpoint every K steps");
  train->add_option_function<int>("--threads", [o](int v) { o->set_threads(v); },
                                  "Torch threads per rank (default 1)");
  train->add_option_function<std::string>("--device", [o](const std::string& v) { o->set_device(v); },
                                          "cpu | cuda (each rank on cuda:LOCAL_RANK, NCCL) | cuda:N | "
                                          "auto (default cpu)");
  train->add_option_function<std::string>("--resume", [o](const std::string& v) { o->set_resume(v); },
                                          "Continue the run of this checkpoint");
  train->add_option_function<std::string>("--init-from", [o](const std::string& v) { o->set_init_from(v); },
                                          "Fine-tune from this checkpoint");
  train->add_option_function<double>("--rendezvous-timeout", [o](double v) { o->set_rendezvous_timeout_s(v); },
                                     "Seconds to wait for the other ranks (default 60)");
  train->add_flag("--no-packing", f->packing_off, "Transformer: padded attention instead of packing");
}

absl::StatusOr<v1::TrainConfig> EffectiveConfig(const TrainFlags& f) {
  v1::TrainConfig config;
  if (!f.config_path.empty()) ROBOLOOP_RETURN_IF_ERROR(LoadYamlFile(f.config_path, &config));
  config.MergeFrom(f.overrides);
  if (f.packing_off) config.set_no_packing(true);
  return train::WithDefaults(config);
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
  } else if (event.has_finished()) {
    std::printf("finished run %s after %lld steps, final loss %.6g, checkpoint %s\n",
                event.run_id().c_str(), static_cast<long long>(event.finished().steps()),
                event.finished().final_loss(), event.finished().checkpoint_id().c_str());
  }
}

absl::Status RunRank(const TrainFlags& f, const train::RankInfo& rank) {
  ROBOLOOP_ASSIGN_OR_RETURN(v1::TrainConfig config, EffectiveConfig(f));
  ROBOLOOP_ASSIGN_OR_RETURN(auto connection, wiring::RegistryConnection::Open(f.target));
  std::signal(SIGINT, RequestCancel);
  std::signal(SIGTERM, RequestCancel);
  train::TrainRunOptions options;
  options.config = config;
  options.rank = rank;
  options.root = f.target.root;
  if (const char* run_id = std::getenv("ROBOLOOP_RUN_ID"); run_id != nullptr) options.run_id = run_id;
  options.registry = &connection->client();
  options.cancel = &cancel_requested;
  if (rank.rank == 0) options.on_event = PrintEvent;
  ROBOLOOP_ASSIGN_OR_RETURN(train::TrainRunResult result, train::RunTraining(options));
  if (result.cancelled) {
    return absl::CancelledError(absl::StrCat("training cancelled after ", result.steps,
                                             " steps; resume with --resume ", result.checkpoint_id));
  }
  return absl::OkStatus();
}

// A run TrainService started (ROBOLOOP_EXIT_WITH_PARENT=<its pid>) is stopped (SIGTERM: it
// checkpoints) when the service dies, so a killed service leaves no training behind.
void ExitWithParentIfAsked() {
  const char* parent = std::getenv("ROBOLOOP_EXIT_WITH_PARENT");
  if (parent == nullptr) return;
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (std::to_string(getppid()) != parent) std::raise(SIGTERM);
  unsetenv("ROBOLOOP_EXIT_WITH_PARENT");
}

absl::Status Train(const TrainFlags& f) {
  ExitWithParentIfAsked();
  ROBOLOOP_ASSIGN_OR_RETURN(std::optional<train::RankInfo> job, train::RankInfoFromEnvironment());
  if (job.has_value()) return RunRank(f, *job);
  // Check the config before spawning anything.
  ROBOLOOP_RETURN_IF_ERROR(EffectiveConfig(f).status());
  if (f.nproc_per_node <= 1) return RunRank(f, train::RankInfo{});
  train::LaunchOptions launch;
  launch.argv = f.argv;
  launch.argv[0] = "/proc/self/exe";
  launch.nproc = f.nproc_per_node;
  launch.extra_env.push_back("ROBOLOOP_RUN_ID=" + NewUuid());
  return train::LaunchLocalRanks(launch);
}

// Flags of `serve train`.
struct ServeTrainFlags {
  wiring::RegistryTarget target;
  ServerFlags server;
};

absl::Status ServeTrain(const ServeTrainFlags& flags) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto signals, common::ShutdownSignals::Create());
  train::TrainServiceOptions options;
  options.root = flags.target.root;
  options.registry_address = flags.target.address;
  options.registry_token_file = flags.target.token_file;
  train::TrainServiceHandler handler(options);
  train::TrainGrpcService service(&handler);
  ROBOLOOP_ASSIGN_OR_RETURN(auto server, common::GrpcServer::Create(ServerOptionsFrom(flags.server), {&service}));
  std::printf("train serving on %s\n", server->target().c_str());
  std::fflush(stdout);
  common::ServeUntilShutdownSignal(*server, *signals);
  return absl::OkStatus();
}

}  // namespace

void AddServeTrainCommand(CLI::App* serve, CommandRunner& runner) {
  auto flags = std::make_shared<ServeTrainFlags>();
  CLI::App* command = serve->add_subcommand("train", "Run TrainService");
  AddServerFlags(command, &flags->server, "127.0.0.1:50053");
  AddRegistryTargetFlags(command, &flags->target);
  runner.Bind(command, [flags] { return ServeTrain(*flags); });
}

void AddTrainCommand(CLI::App& app, CommandRunner& runner, int argc, char** argv) {
  auto flags = std::make_shared<TrainFlags>();
  flags->argv.assign(argv, argv + argc);
  CLI::App* train = app.add_subcommand("train", "Train a policy (data-parallel with --nproc-per-node)");
  train->add_option("config", flags->config_path, "YAML TrainConfig (proto/roboloop/v1/train.proto)");
  train->add_option("--nproc-per-node", flags->nproc_per_node, "Local ranks (data parallel: Gloo on the CPU, NCCL on CUDA)");
  AddConfigFlags(train, flags.get());
  AddRegistryTargetFlags(train, &flags->target);
  runner.Bind(train, [flags] { return Train(*flags); });
}

}  // namespace roboloop::cli
