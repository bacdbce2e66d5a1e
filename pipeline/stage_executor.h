// The product's StageExecutor (issue 8, req 1 and 5; issue 27, req 1): runs each stage with its
// kind's run function (StageKind::run, given by the scheduler in the context) over the
// services' gRPC clients. Every output that names an artifact is its registry id, so the run
// store's cache keys (which hold the substituted parameters) are content keys.
#pragma once

#include "pipeline/scheduler.h"
#include "pipeline/stage_services.h"

namespace roboloop::pipeline {

// Thread-safe: stages run concurrently, each on its own calls.
class ServiceStageExecutor : public StageExecutor {
 public:
  // Uses `clients` (not owned; must outlive the executor).
  ServiceStageExecutor(wiring::ServiceClients* clients, ExecutorOptions options) : services_(clients, std::move(options)) {}

  // InvalidArgument when the context names no kind or a kind that cannot run (a loop).
  absl::StatusOr<StageOutputs> Run(const v1::Stage& stage, const StageContext& context) override;
  // "protocol <name> <hash>" for each of the kind's served_protocols, the hash as the eval
  // service reports it (StageServices::ServedProtocolHash).
  absl::StatusOr<std::vector<std::string>> ServedInputs(const v1::Stage& stage, const StageContext& context) override;

  // What the stages use; also what the kinds' summaries get.
  StageServices& services() { return services_; }

 private:
  StageServices services_;
};

}  // namespace roboloop::pipeline
