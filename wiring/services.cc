#include "wiring/services.h"
#include "wiring/tasks.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "common/config.h"
#include "common/fs.h"
#include "common/grpc_server.h"
#include "common/status.h"
#include "common/store_layout.h"
#include "eval/eval_grpc_service.h"
#include "eval/eval_service.h"
#include "eval/leaderboard_store.h"
#include "registry/registry_host.h"
#include "roboloop/v1/services.pb.h"
#include "sim/builtin_tasks.h"
#include "sim/sim_grpc_service.h"
#include "sim/sim_service.h"
#include "sim/task_plugin.h"
#include "sim/yaml_task.h"
#include "wiring/registry_connection.h"

namespace roboloop::wiring {
namespace {

// A path of the services file relative to its folder (absolute and empty paths unchanged).
std::string BesideFile(const std::string& file, const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  return JoinPath(ParentDir(file), path);
}

absl::StatusOr<common::GrpcChannelOptions> ChannelFor(const std::string& file, const std::string& what,
                                                      const v1::ServiceEndpoint& endpoint) {
  if (endpoint.address().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": ", what, ".address must be set"));
  }
  common::GrpcChannelOptions channel;
  channel.target = endpoint.address();
  channel.token_file = BesideFile(file, endpoint.token_file());
  channel.tls_root_cert_file = BesideFile(file, endpoint.tls_ca());
  channel.tls_server_name = endpoint.tls_server_name();
  return channel;
}

// `value`, or its error prefixed with `what`.
template <typename T>
absl::StatusOr<T> Named(absl::StatusOr<T> value, const std::string& what) {
  if (!value.ok()) return Annotate(value.status(), what);
  return value;
}

common::GrpcChannelOptions LocalChannel(const std::string& target, const std::string& display_name) {
  common::GrpcChannelOptions channel;
  channel.target = target;
  channel.display_name = display_name;
  return channel;
}

}  // namespace

absl::StatusOr<ServiceTargets> LoadServicesFile(const std::string& path) {
  v1::ServicesConfig config;
  ROBOLOOP_RETURN_IF_ERROR(LoadYamlFile(path, &config));
  ServiceTargets targets;
  ROBOLOOP_ASSIGN_OR_RETURN(targets.registry, ChannelFor(path, "registry", config.registry()));
  ROBOLOOP_ASSIGN_OR_RETURN(targets.train, ChannelFor(path, "train", config.train()));
  ROBOLOOP_ASSIGN_OR_RETURN(targets.eval, ChannelFor(path, "eval", config.eval()));
  if (config.sim_size() == 0) return absl::InvalidArgumentError(absl::StrCat(path, ": list at least one sim endpoint"));
  for (int i = 0; i < config.sim_size(); ++i) {
    ROBOLOOP_ASSIGN_OR_RETURN(common::GrpcChannelOptions sim, ChannelFor(path, absl::StrCat("sim[", i, "]"), config.sim(i)));
    targets.sims.push_back(sim);
  }
  return targets;
}

// Everything the embedded services are made of, in construction order (destroyed in reverse:
// the server stops before the handlers it serves go away).
struct EmbeddedServices::Parts {
  std::unique_ptr<registry::RegistryHost> registry_host;
  std::unique_ptr<registry::RegistryClient> registry;  // what sim and eval resolve through
  std::unique_ptr<sim::TaskRegistry> tasks;
  std::unique_ptr<sim::SimServiceHandler> sim;
  std::unique_ptr<sim::SimGrpcService> sim_service;
  std::unique_ptr<train::TrainServiceHandler> train;
  std::unique_ptr<train::TrainGrpcService> train_service;
  std::unique_ptr<eval::LeaderboardStore> leaderboard;
  std::unique_ptr<eval::EvalServiceHandler> eval;
  std::unique_ptr<eval::EvalGrpcService> eval_service;
  std::unique_ptr<common::GrpcServer> server;  // sim, train and eval

  // The registry, serving on the store's embedded registry socket, and the client to it.
  absl::Status StartRegistry(const StoreLayout& layout, const EmbeddedOptions& options);
  // The sim handler (tasks built in and from `options.task_files`) and its gRPC service.
  absl::Status MakeSim(const StoreLayout& layout, const EmbeddedOptions& options);
  // The train handler, whose workers reach the registry at `registry_target`, and its gRPC service.
  void MakeTrain(const EmbeddedOptions& options, const std::string& registry_target);
  // The leaderboard, the eval handler rolling out on the sims at `services_target`, and its gRPC service.
  absl::Status MakeEval(const StoreLayout& layout, const EmbeddedOptions& options,
                        const std::string& services_target);
};

absl::Status EmbeddedServices::Parts::StartRegistry(const StoreLayout& layout, const EmbeddedOptions& options) {
  registry::RegistryHost::Options host;
  host.registry.root = options.root;
  host.server.listen_address = layout.EmbeddedSocket("registry");
  ROBOLOOP_ASSIGN_OR_RETURN(registry_host, Named(registry::RegistryHost::Create(host), "embedded registry"));
  ROBOLOOP_ASSIGN_OR_RETURN(registry, registry::RegistryClient::Connect(LocalChannel(
                                          registry_host->target(), EmbeddedRegistryName(options.root))));
  return absl::OkStatus();
}

absl::Status EmbeddedServices::Parts::MakeSim(const StoreLayout& layout, const EmbeddedOptions& options) {
  ROBOLOOP_ASSIGN_OR_RETURN(tasks, TaskRegistryWith({}, options.task_files));
  sim::SimServiceHandler::Options sim_options;
  sim_options.registry = tasks.get();
  sim_options.checkpoints = registry.get();
  sim_options.checkpoint_cache_dir = layout.PolicyCache();
  sim_options.dataset_cache_dir = layout.DatasetCache();
  sim_options.dataset_dir = layout.ServiceDatasets();
  if (!options.dataset_checker.empty()) sim_options.screen_dataset = data::ProgramFileScreen(options.dataset_checker);
  ROBOLOOP_RETURN_IF_ERROR(MakeDirs(sim_options.dataset_dir));
  ROBOLOOP_ASSIGN_OR_RETURN(sim, sim::SimServiceHandler::Create(sim_options));
  sim_service = std::make_unique<sim::SimGrpcService>(sim.get(), sim::SimGrpcService::Options());
  return absl::OkStatus();
}

void EmbeddedServices::Parts::MakeTrain(const EmbeddedOptions& options, const std::string& registry_target) {
  train::TrainServiceOptions train_options;
  train_options.root = options.root;
  train_options.registry_address = registry_target;
  train = std::make_unique<train::TrainServiceHandler>(train_options);
  train_service = std::make_unique<train::TrainGrpcService>(train.get());
}

absl::Status EmbeddedServices::Parts::MakeEval(const StoreLayout& layout, const EmbeddedOptions& options,
                                               const std::string& services_target) {
  eval::LeaderboardStore::Options store;
  store.root = options.root;
  ROBOLOOP_ASSIGN_OR_RETURN(leaderboard, eval::LeaderboardStore::Create(store));
  eval::EvalServiceHandler::Options eval_options;
  eval_options.store = leaderboard.get();
  eval_options.registry = registry.get();
  eval_options.protocols_dir = options.protocols_dir;
  eval_options.default_sim_endpoints = {services_target};
  eval_options.sim_display_names = {{services_target, kEmbeddedSimName}};
  ROBOLOOP_ASSIGN_OR_RETURN(eval, eval::EvalServiceHandler::Create(eval_options));
  eval::EvalGrpcService::Options eval_service_options;
  eval_service_options.registry = registry.get();
  eval_service_options.dataset_cache_dir = layout.DatasetCache();
  eval_service = std::make_unique<eval::EvalGrpcService>(eval.get(), eval_service_options);
  return absl::OkStatus();
}

EmbeddedServices::~EmbeddedServices() = default;

absl::StatusOr<std::unique_ptr<EmbeddedServices>> EmbeddedServices::Start(const EmbeddedOptions& options) {
  std::unique_ptr<EmbeddedServices> services(new EmbeddedServices());
  services->parts_ = std::make_unique<Parts>();
  Parts& p = *services->parts_;
  const StoreLayout layout(options.root);
  ROBOLOOP_RETURN_IF_ERROR(MakeDirs(layout.Sockets()));
  layout.RemoveStaleSockets();

  ROBOLOOP_RETURN_IF_ERROR(p.StartRegistry(layout, options));
  const std::string registry_target = p.registry_host->target();
  const std::string services_target = layout.EmbeddedSocket("services");
  ROBOLOOP_RETURN_IF_ERROR(p.MakeSim(layout, options));
  p.MakeTrain(options, registry_target);
  ROBOLOOP_RETURN_IF_ERROR(p.MakeEval(layout, options, services_target));
  common::GrpcServerOptions server;
  server.listen_address = services_target;
  ROBOLOOP_ASSIGN_OR_RETURN(
      p.server, Named(common::GrpcServer::Create(server, {p.sim_service.get(), p.train_service.get(),
                                                              p.eval_service.get()}),
                      "embedded sim, train and eval services"));
  services->targets_.registry = LocalChannel(registry_target, EmbeddedRegistryName(options.root));
  services->targets_.train = LocalChannel(p.server->target(), kEmbeddedTrainName);
  services->targets_.eval = LocalChannel(p.server->target(), kEmbeddedEvalName);
  services->targets_.sims = {LocalChannel(p.server->target(), kEmbeddedSimName)};
  services->targets_.embedded = true;
  return services;
}

absl::StatusOr<ServiceTargets> StartOrLoadServices(const std::string& services_file,
                                                   const EmbeddedOptions& embedded_options,
                                                   std::unique_ptr<EmbeddedServices>* embedded) {
  if (!services_file.empty()) return LoadServicesFile(services_file);
  ROBOLOOP_ASSIGN_OR_RETURN(*embedded, EmbeddedServices::Start(embedded_options));
  return (*embedded)->targets();
}

absl::StatusOr<std::unique_ptr<ServiceClients>> ServiceClients::Connect(const ServiceTargets& targets) {
  if (targets.sims.empty()) return absl::InvalidArgumentError("no sim endpoint to connect to");
  std::unique_ptr<ServiceClients> clients(new ServiceClients());
  ROBOLOOP_ASSIGN_OR_RETURN(clients->registry_, registry::RegistryClient::Connect(targets.registry));
  ROBOLOOP_ASSIGN_OR_RETURN(clients->train_, train::TrainClient::Connect(targets.train));
  ROBOLOOP_ASSIGN_OR_RETURN(clients->eval_, eval::EvalClient::Connect(targets.eval));
  ROBOLOOP_ASSIGN_OR_RETURN(clients->sim_, sim::SimClient::Connect(targets.sims.front()));
  if (!targets.embedded) {
    for (const common::GrpcChannelOptions& sim : targets.sims) clients->sim_addresses_.push_back(sim.target);
  }
  return clients;
}

}  // namespace roboloop::wiring
