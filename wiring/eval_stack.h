// Everything an evaluation runs on (issue 27, req 3): a registry connection, the leaderboard
// store, the sim endpoints (an embedded SimService on a unix socket unless some are named) and
// the EvalService handler over them. Used by `roboloop eval|promote|serve eval`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/grpc_server.h"
#include "eval/eval_service.h"
#include "eval/leaderboard_store.h"
#include "sim/sim_grpc_service.h"
#include "sim/sim_service.h"
#include "sim/task_registry.h"
#include "wiring/registry_connection.h"

namespace roboloop::wiring {

// What an evaluation stack is built from.
struct EvalStackOptions {
  RegistryTarget registry;              // checkpoints; its root also holds the leaderboard and caches
  std::string protocols_dir;            // named protocols
  std::vector<std::string> sims;        // sim endpoints; empty = one embedded sim service
  std::vector<std::string> task_plugins;  // embedded sim service only: shared libraries adding tasks
  std::vector<std::string> yaml_tasks;    // embedded sim service only: declarative task files
  std::string sim_token_file;           // bearer token for `sims`
  int shards_per_endpoint = 2;          // seed-range shards per endpoint
  int envs = 4;                         // envs per shard rollout
};

// Owns every part; the handler is valid as long as the stack.
class EvalStack {
 public:
  // Connects (or starts) every part; errors name the part that failed. Task plug-ins or YAML
  // tasks with `sims` named are InvalidArgument: a remote sim service loads its own.
  static absl::StatusOr<std::unique_ptr<EvalStack>> Open(const EvalStackOptions& options);

  eval::EvalServiceHandler& handler() { return *handler_; }
  registry::RegistryClient& registry() { return registry_->client(); }
  // The endpoints evaluations fan out over (the embedded one when none was named).
  const std::vector<std::string>& endpoints() const { return endpoints_; }

 private:
  EvalStack() = default;
  absl::Status StartEmbeddedSim(const EvalStackOptions& options);

  std::unique_ptr<RegistryConnection> registry_;
  std::unique_ptr<eval::LeaderboardStore> store_;
  std::unique_ptr<sim::TaskRegistry> tasks_;
  std::unique_ptr<sim::SimServiceHandler> sim_handler_;
  std::unique_ptr<sim::SimGrpcService> sim_service_;
  std::unique_ptr<common::GrpcServer> sim_server_;
  std::vector<std::string> endpoints_;
  std::unique_ptr<eval::EvalServiceHandler> handler_;
};

}  // namespace roboloop::wiring
