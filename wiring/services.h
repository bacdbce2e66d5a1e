// Where a pipeline run's stages execute (issue 8, req 6): the services named in a services
// file (remote mode), or every service started in this process on unix sockets under the
// store root (embedded mode, the default). Both are reached through the same gRPC clients.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/grpc_client.h"
#include "eval/eval_client.h"
#include "registry/registry_client.h"
#include "sim/sim_client.h"
#include "sim/task_registry.h"
#include "train/train_service.h"

namespace roboloop::wiring {

// How to reach each service.
struct ServiceTargets {
  common::GrpcChannelOptions registry;
  common::GrpcChannelOptions train;
  common::GrpcChannelOptions eval;
  std::vector<common::GrpcChannelOptions> sims;  // at least one
  bool embedded = false;                         // started by this process
};

// Reads a services file (proto/roboloop/v1/services.proto as YAML). Errors name the file and
// the missing or unknown field; every service needs an address and at least one sim is listed.
// Relative token and TLS paths are taken relative to the file's folder.
absl::StatusOr<ServiceTargets> LoadServicesFile(const std::string& path);

// How errors name the services embedded in a process (users never see their unix sockets).
inline constexpr char kEmbeddedSimName[] = "the embedded simulation service";
inline constexpr char kEmbeddedTrainName[] = "the embedded training service";
inline constexpr char kEmbeddedEvalName[] = "the embedded evaluation service";

// Settings of the embedded services.
struct EmbeddedOptions {
  std::string root = ".roboloop";                    // registry store, runs, leaderboard, datasets
  std::string protocols_dir = "configs/protocols";   // the evaluation service's named protocols
  std::vector<std::string> task_files;               // YAML-declared tasks the sim service adds
  // The roboloop program whose `data validate` checks a Relabel input before the sim service reads it
  // (data::ProgramFileScreen); "" = not checked. The command line passes itself.
  std::string dataset_checker;
};

// The registry, train, sim and eval services of one process, on unix sockets under
// `<root>/run/` (removing first the sockets processes that are gone left there), whose errors
// name them as EmbeddedRegistryName and kEmbedded*Name do. Stops them when destroyed.
class EmbeddedServices {
 public:
  // Starts every service; errors name the service that failed to start.
  static absl::StatusOr<std::unique_ptr<EmbeddedServices>> Start(const EmbeddedOptions& options);
  ~EmbeddedServices();

  // Targets of the running services (embedded = true).
  const ServiceTargets& targets() const { return targets_; }

 private:
  EmbeddedServices() = default;
  struct Parts;
  std::unique_ptr<Parts> parts_;
  ServiceTargets targets_;
};

// The services a command uses: those `services_file` names, or (when it is empty) every service
// started embedded with `embedded_options`, owned by `*embedded`.
absl::StatusOr<ServiceTargets> StartOrLoadServices(const std::string& services_file,
                                                   const EmbeddedOptions& embedded_options,
                                                   std::unique_ptr<EmbeddedServices>* embedded);

// Connected clients of every service. Thread-safe as the clients are.
class ServiceClients {
 public:
  // Creates channels to `targets` (lazily connecting; errors name the target).
  static absl::StatusOr<std::unique_ptr<ServiceClients>> Connect(const ServiceTargets& targets);

  registry::RegistryClient& registry() { return *registry_; }
  train::TrainClient& train() { return *train_; }
  eval::EvalClient& eval() { return *eval_; }
  sim::SimClient& sim() { return *sim_; }  // the first sim endpoint
  // Sim addresses evaluations fan out over (empty in embedded mode: the service's own).
  const std::vector<std::string>& sim_addresses() const { return sim_addresses_; }

 private:
  ServiceClients() = default;
  std::unique_ptr<registry::RegistryClient> registry_;
  std::unique_ptr<train::TrainClient> train_;
  std::unique_ptr<eval::EvalClient> eval_;
  std::unique_ptr<sim::SimClient> sim_;
  std::vector<std::string> sim_addresses_;
};

}  // namespace roboloop::wiring
