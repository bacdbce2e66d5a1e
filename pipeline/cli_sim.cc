#include "pipeline/cli_sim.h"

#include <cstdio>
#include <memory>

#include <google/protobuf/util/json_util.h>
#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/grpc_server.h"
#include "common/grpc_signals.h"
#include "common/status.h"
#include "pipeline/table.h"
#include "sim/builtin_tasks.h"
#include "sim/sim_client.h"
#include "sim/sim_grpc_service.h"
#include "sim/sim_service.h"
#include "sim/task_plugin.h"
#include "sim/task_registry.h"
#include "sim/yaml_task.h"

namespace roboloop::cli {
namespace {

// Flags of the sim commands.
struct SimFlags {
  std::string sim;                        // remote SimService; empty = in-process
  std::string token_file;                 // bearer token for --sim
  std::vector<std::string> task_plugins;  // shared libraries adding tasks
  std::vector<std::string> yaml_tasks;    // declarative task files
  Format format = Format::kTable;
  v1::RolloutRequest rollout;
  std::string listen = "127.0.0.1:7072";
  std::string server_token_file;
  std::string tls_cert;
  std::string tls_key;
  bool insecure = false;
};

// Built-in tasks plus those from --task-plugin, $ROBOLOOP_TASK_PLUGINS and --task-yaml.
absl::StatusOr<std::unique_ptr<sim::TaskRegistry>> BuildTaskRegistry(const SimFlags& flags) {
  auto registry = std::make_unique<sim::TaskRegistry>();
  ROBOLOOP_RETURN_IF_ERROR(sim::RegisterBuiltins(registry.get()));
  ROBOLOOP_RETURN_IF_ERROR(sim::LoadTaskPluginsFromEnvironment(registry.get()));
  for (const std::string& plugin : flags.task_plugins) {
    ROBOLOOP_RETURN_IF_ERROR(sim::LoadTaskPlugin(plugin, registry.get()));
  }
  for (const std::string& yaml : flags.yaml_tasks) {
    ROBOLOOP_RETURN_IF_ERROR(sim::RegisterYamlTask(yaml, registry.get()));
  }
  return registry;
}

// Runs the sim commands either in-process (a handler over the local task registry) or
// through a SimClient.
class SimBackend {
 public:
  static absl::StatusOr<std::unique_ptr<SimBackend>> Open(const SimFlags& flags) {
    std::unique_ptr<SimBackend> backend(new SimBackend());
    if (!flags.sim.empty()) {
      common::GrpcChannelOptions channel;
      channel.target = flags.sim;
      channel.token_file = flags.token_file;
      ROBOLOOP_ASSIGN_OR_RETURN(backend->client_, sim::SimClient::Connect(channel));
      return backend;
    }
    ROBOLOOP_ASSIGN_OR_RETURN(backend->tasks_, BuildTaskRegistry(flags));
    sim::SimServiceHandler::Options options;
    options.registry = backend->tasks_.get();
    ROBOLOOP_ASSIGN_OR_RETURN(backend->handler_, sim::SimServiceHandler::Create(options));
    return backend;
  }

  absl::StatusOr<v1::ListTasksResponse> ListTasks() const {
    return client_ ? client_->ListTasks() : handler_->ListTasks();
  }

  absl::Status Rollout(const v1::RolloutRequest& request, const sim::EpisodeCallback& on_episode) const {
    return client_ ? client_->Rollout(request, on_episode)
                   : handler_->Rollout(request, on_episode, nullptr);
  }

 private:
  SimBackend() = default;
  std::unique_ptr<sim::TaskRegistry> tasks_;
  std::unique_ptr<sim::SimServiceHandler> handler_;
  std::unique_ptr<sim::SimClient> client_;
};

std::string ToJsonLine(const google::protobuf::Message& message) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  return json;
}

absl::Status ListTasks(const SimFlags& flags) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto backend, SimBackend::Open(flags));
  ROBOLOOP_ASSIGN_OR_RETURN(v1::ListTasksResponse tasks, backend->ListTasks());
  if (flags.format == Format::kJson) {
    std::printf("%s\n", ToJsonLine(tasks).c_str());
    return absl::OkStatus();
  }
  Table table({"TASK", "ACTIONS", "MAX STEPS", "DT", "EXPERT", "SUMMARY"});
  for (const v1::TaskInfo& t : tasks.tasks()) {
    table.AddRow({t.name(), absl::StrCat(t.action_low_size()), absl::StrCat(t.max_steps()),
                  absl::StrFormat("%.3f", t.control_dt()), t.has_expert() ? "yes" : "no", t.summary()});
  }
  std::printf("%s", table.Render().c_str());
  return absl::OkStatus();
}

absl::Status Rollout(const SimFlags& flags) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto backend, SimBackend::Open(flags));
  int64_t successes = 0, episodes = 0;
  double total_return = 0;
  Table table({"EPISODE", "SEED", "RETURN", "LENGTH", "SUCCESS", "END", "STATE HASH"});
  absl::Status status = backend->Rollout(flags.rollout, [&](const v1::EpisodeRecord& r) {
    ++episodes;
    successes += r.success() ? 1 : 0;
    total_return += r.episode_return();
    if (flags.format == Format::kJson) {
      std::printf("%s\n", ToJsonLine(r).c_str());
    } else {
      table.AddRow({absl::StrCat(r.episode_index()), absl::StrCat(r.seed()),
                    absl::StrFormat("%.3f", r.episode_return()), absl::StrCat(r.length()),
                    r.success() ? "yes" : "no", r.end_reason(),
                    absl::StrFormat("%016x", r.final_state_hash())});
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

absl::Status ServeSim(const SimFlags& flags) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto signals, common::ShutdownSignals::Create());
  ROBOLOOP_ASSIGN_OR_RETURN(auto tasks, BuildTaskRegistry(flags));
  sim::SimServiceHandler::Options options;
  options.registry = tasks.get();
  ROBOLOOP_ASSIGN_OR_RETURN(auto handler, sim::SimServiceHandler::Create(options));
  sim::SimGrpcService service(handler.get(), {});
  common::GrpcServerOptions server_options;
  server_options.listen_address = flags.listen;
  server_options.token_file = flags.server_token_file;
  server_options.tls_cert_file = flags.tls_cert;
  server_options.tls_key_file = flags.tls_key;
  server_options.insecure = flags.insecure;
  ROBOLOOP_ASSIGN_OR_RETURN(auto server, common::GrpcServer::Create(server_options, {&service}));
  std::printf("sim serving %zu tasks on %s\n", tasks->Names().size(), server->target().c_str());
  std::fflush(stdout);
  int signal_number = common::ServeUntilShutdownSignal(*server, *signals);
  spdlog::info("sim stopped after signal {}", signal_number);
  return absl::OkStatus();
}

void AddTaskSourceOptions(CLI::App* command, SimFlags* flags) {
  command->add_option("--task-plugin", flags->task_plugins, "Shared library adding tasks (repeatable)");
  command->add_option("--task-yaml", flags->yaml_tasks, "Declarative task YAML (repeatable)");
}

void AddRemoteOptions(CLI::App* command, SimFlags* flags) {
  command->add_option("--sim", flags->sim, "Remote SimService HOST:PORT or unix:PATH");
  command->add_option("--token-file", flags->token_file, "Bearer token file for --sim");
}

std::shared_ptr<SimFlags> SharedFlags() {
  static auto flags = std::make_shared<SimFlags>();
  return flags;
}

}  // namespace

void AddSimCommands(CLI::App& app, CommandRunner& runner) {
  std::shared_ptr<SimFlags> flags = SharedFlags();
  SimFlags* f = flags.get();
  CLI::App* sim = app.add_subcommand("sim", "Batched MuJoCo simulation: tasks and rollouts");
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
  v1::RolloutRequest* r = &f->rollout;
  rollout->add_option_function<std::string>("--task", [r](const std::string& v) { r->set_task(v); },
                                            "Task name")->required();
  rollout->add_option_function<std::string>("--policy", [r](const std::string& v) { r->set_policy(v); },
                                            "expert or random")->required();
  rollout->add_option_function<int64_t>("--episodes", [r](int64_t v) { r->set_num_episodes(v); },
                                        "Number of episodes")->required();
  rollout->add_option_function<int64_t>("--first-episode", [r](int64_t v) { r->set_first_episode(v); },
                                        "First episode index of the seed range");
  rollout->add_option_function<uint64_t>("--seed", [r](uint64_t v) { r->set_base_seed(v); },
                                         "Base seed (episode i uses EpisodeSeed(seed, i))");
  rollout->add_option_function<int>("--envs", [r](int v) { r->set_envs(v); }, "Envs stepped together");
  rollout->add_option_function<int>("--threads", [r](int v) { r->set_threads(v); }, "Physics threads");
  rollout->add_option_function<int>("--max-steps", [r](int v) { r->set_max_steps(v); },
                                    "Horizon override");
  runner.Bind(rollout, [flags] { return Rollout(*flags); });
}

void AddServeSimCommand(CLI::App* serve, CommandRunner& runner) {
  std::shared_ptr<SimFlags> flags = SharedFlags();
  SimFlags* f = flags.get();
  CLI::App* command = serve->add_subcommand("sim", "Run SimService");
  AddTaskSourceOptions(command, f);
  command->add_option("--listen", f->listen, "HOST:PORT or unix:PATH")->capture_default_str();
  command->add_option("--token-file", f->server_token_file, "Require this bearer token");
  command->add_option("--tls-cert", f->tls_cert, "PEM certificate chain (with --tls-key)");
  command->add_option("--tls-key", f->tls_key, "PEM private key");
  command->add_flag("--insecure", f->insecure, "Allow plaintext on a non-loopback address");
  runner.Bind(command, [flags] { return ServeSim(*flags); });
}

}  // namespace roboloop::cli
