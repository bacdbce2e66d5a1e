#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "common/status.h"
#include "pipeline/stage_kinds/builtin.h"
#include "pipeline/stage_services.h"
#include "train/dataset_set.h"
#include "train/train_config_check.h"
#include "train/train_run.h"

namespace roboloop::pipeline {
namespace {

// Stops a training run through TrainService.Cancel (its ranks checkpoint and exit) once the
// stage is cancelled and the run's id is known, whichever comes last.
class TrainRunCanceller {
 public:
  TrainRunCanceller(train::TrainClient* client, const common::CancellationToken* cancel)
      : client_(client), cancel_(cancel), registration_(cancel->OnCancel([this] { CancelIfKnown(); })) {}

  // Records the run's id (from its first event on).
  void Started(const std::string& run_id) {
    {
      absl::MutexLock lock(&mu_);
      if (!run_id_.empty()) return;
      run_id_ = run_id;
    }
    if (cancel_->IsCancelled()) CancelIfKnown();
  }

 private:
  void CancelIfKnown() {
    std::string id;
    {
      absl::MutexLock lock(&mu_);
      if (run_id_.empty() || sent_) return;
      sent_ = true;
      id = run_id_;
    }
    (void)client_->Cancel(id);
  }

  train::TrainClient* client_;
  const common::CancellationToken* cancel_;
  absl::Mutex mu_;
  std::string run_id_ ABSL_GUARDED_BY(mu_);
  bool sent_ ABSL_GUARDED_BY(mu_) = false;
  common::CancellationCallback registration_;  // last: unregistered before the fields above go
};

absl::StatusOr<StageOutputs> RunTrain(const v1::Stage& stage, const StageContext& context, StageServices& services) {
  v1::TrainRequest request;
  *request.mutable_config() = stage.train();
  if (request.config().model().empty()) request.mutable_config()->set_model(services.DefaultName(context.label));
  // Local files go through the registry: the train service may run elsewhere or be confined to its dataset folder.
  ROBOLOOP_RETURN_IF_ERROR(train::RegisterLocalDatasets(services.clients().registry(), services.options().cache_dir,
                                                        request.mutable_config()));
  if (!context.resume_point.empty()) {  // continue the stopped training; its weights came from init_from
    // A run stopped after it registered its last checkpoint has nothing left to train: that checkpoint is the stage's.
    const absl::StatusOr<v1::Checkpoint> point = services.clients().registry().GetCheckpoint(context.resume_point);
    if (point.ok() && point->step() >= train::WithDefaults(stage.train()).steps()) {
      return StageOutputs{{"checkpoint", point->id()}, {"run", point->run_id()}};
    }
    request.mutable_config()->set_resume(context.resume_point);
    request.mutable_config()->clear_init_from();
  }
  request.set_world_size(std::max(1, stage.ranks()));
  const double total = static_cast<double>(stage.train().steps() > 0 ? stage.train().steps() : 1000);
  std::string run_id, checkpoint, failure, placement;
  TrainRunCanceller canceller(&services.clients().train(), context.cancel);
  absl::Status status = services.clients().train().Train(request, [&](const v1::TrainEvent& event) {
    run_id = event.run_id();
    canceller.Started(run_id);
    if (event.has_placement()) {
      placement = event.placement().note();
      context.Report(0, total, "steps", placement);
    } else if (event.has_step()) {
      context.Report(static_cast<double>(event.step().step()), total, "steps",
                     absl::StrFormat("loss %.4g, %.0f samples/s", event.step().loss(), event.step().samples_per_s()));
    } else if (event.has_checkpoint()) {
      // Not fatal: an unrecorded checkpoint only makes a resumed stage continue from an earlier one.
      (void)context.RecordResumePoint(event.checkpoint().checkpoint_id());
    } else if (event.has_finished()) {
      checkpoint = event.finished().checkpoint_id();
    } else if (event.has_failed()) {
      failure = event.failed().message();
    }
  });
  ROBOLOOP_RETURN_IF_ERROR(context.CheckCancelled());
  ROBOLOOP_RETURN_IF_ERROR(status);
  if (checkpoint.empty()) {
    return absl::InternalError(absl::StrCat("training run ", run_id, " ended without a checkpoint",
                                            failure.empty() ? "" : ": ", failure));
  }
  StageOutputs outputs{{"checkpoint", checkpoint}, {"run", run_id}};
  if (!placement.empty()) outputs["placement"] = placement;
  return outputs;
}

// "<stage>: <how its ranks were placed>" when the service placed them otherwise than asked.
std::vector<std::string> SummarizeTrain(const v1::Stage& stage, const StageOutputs& outputs, StageServices&) {
  auto it = outputs.find("placement");
  if (it == outputs.end()) return {};
  return {absl::StrCat(stage.name(), ": ", it->second)};
}

}  // namespace

StageKind TrainStageKind() {
  StageKind kind;
  kind.name = "train";
  kind.params = v1::TrainConfig::descriptor();
  kind.check_params = [](const google::protobuf::Message& params) {
    return train::CheckTrainConfig(train::WithDefaults(static_cast<const v1::TrainConfig&>(params)));
  };
  kind.outputs = {"checkpoint", "run", "placement"};
  kind.spawns_ranks = true;
  kind.local_files = [](const v1::Stage& stage) { return train::LocalDatasetFiles(stage.train()); };
  kind.run = RunTrain;
  kind.summarize = SummarizeTrain;
  return kind;
}

}  // namespace roboloop::pipeline
