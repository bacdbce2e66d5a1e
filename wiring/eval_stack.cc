#include "wiring/eval_stack.h"

#include "common/status.h"
#include "common/store_layout.h"
#include "wiring/services.h"
#include "wiring/tasks.h"

namespace roboloop::wiring {

absl::StatusOr<std::unique_ptr<EvalStack>> EvalStack::Open(const EvalStackOptions& options) {
  if (!options.sims.empty() && !(options.task_plugins.empty() && options.yaml_tasks.empty())) {
    return absl::InvalidArgumentError(
        "task plug-ins and YAML tasks are loaded by the embedded sim service only; start a remote one with "
        "`roboloop serve sim --task-plugin|--task-yaml` instead");
  }
  std::unique_ptr<EvalStack> stack(new EvalStack());
  ROBOLOOP_ASSIGN_OR_RETURN(stack->registry_, RegistryConnection::Open(options.registry));
  eval::LeaderboardStore::Options store;
  store.root = options.registry.root;
  ROBOLOOP_ASSIGN_OR_RETURN(stack->store_, eval::LeaderboardStore::Create(store));
  stack->endpoints_ = options.sims;
  if (stack->endpoints_.empty()) ROBOLOOP_RETURN_IF_ERROR(stack->StartEmbeddedSim(options));
  eval::EvalServiceHandler::Options handler;
  handler.store = stack->store_.get();
  handler.registry = &stack->registry_->client();
  handler.protocols_dir = options.protocols_dir;
  handler.default_sim_endpoints = stack->endpoints_;
  if (options.sims.empty()) handler.sim_display_names = {{stack->endpoints_.front(), kEmbeddedSimName}};
  handler.sim_token_file = options.sims.empty() ? "" : options.sim_token_file;
  handler.shards_per_endpoint = options.shards_per_endpoint;
  handler.envs = options.envs;
  ROBOLOOP_ASSIGN_OR_RETURN(stack->handler_, eval::EvalServiceHandler::Create(handler));
  return stack;
}

absl::Status EvalStack::StartEmbeddedSim(const EvalStackOptions& stack_options) {
  const std::string& root = stack_options.registry.root;
  ROBOLOOP_ASSIGN_OR_RETURN(tasks_, TaskRegistryWith(stack_options.task_plugins, stack_options.yaml_tasks));
  sim::SimServiceHandler::Options options;
  options.registry = tasks_.get();
  options.checkpoints = &registry_->client();
  options.checkpoint_cache_dir = StoreLayout(root).PolicyCache();
  ROBOLOOP_ASSIGN_OR_RETURN(sim_handler_, sim::SimServiceHandler::Create(options));
  sim_service_ = std::make_unique<sim::SimGrpcService>(sim_handler_.get(), sim::SimGrpcService::Options());
  common::GrpcServerOptions server;
  server.listen_address = StoreLayout(root).EmbeddedSocket("sim");
  ROBOLOOP_ASSIGN_OR_RETURN(sim_server_, common::GrpcServer::Create(server, {sim_service_.get()}));
  endpoints_.push_back(sim_server_->target());
  return absl::OkStatus();
}

}  // namespace roboloop::wiring
