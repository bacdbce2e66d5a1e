// The loop of one training rank.
#include "train/train_run.h"

#include <google/protobuf/util/json_util.h>

#include <chrono>
#include <cstdlib>
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"
#include "common/fs.h"
#include "common/status.h"
#include "train/lookahead_batches.h"
#include "train/policy_spec_options.h"
#include "train/rank_failure.h"
#include "train/rank_run.h"
#include "train/train_config_check.h"

namespace roboloop::train {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

absl::StatusOr<int> IntVariable(const char* name, int fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  int value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < 0) {
    return absl::InvalidArgumentError(absl::StrCat("environment variable ", name, "='", text,
                                                   "' is not a non-negative integer"));
  }
  return value;
}

// Steps between validation losses: validate_every, else checkpoint_every, else steps / 10.
int64_t ValidationInterval(const v1::TrainConfig& config) {
  if (config.validate_every() > 0) return config.validate_every();
  if (config.checkpoint_every() > 0) return config.checkpoint_every();
  return std::max<int64_t>(1, config.steps() / 10);
}

// The steps of one prepared rank: batches to the trainer, and on rank 0 the step events, the validation losses
// and the checkpoints.
class RankLoop {
 public:
  RankLoop(const TrainRunOptions& options, RankRun& run)
      : options_(options),
        config_(options.config),
        run_(run),
        leader_(options.rank.rank == 0),
        batches_(*run.loader, *run.trainer, options.config.steps()),
        parent_id_(run.p.parent_id) {
    result_.run_id = run.run_id;
    (void)google::protobuf::util::MessageToJsonString(config_, &config_json_);
  }

  // Runs the steps left (to config.steps, or until cancelled), then saves and registers the last checkpoint and
  // emits `finished` (not when cancelled). An error is emitted as `failed` first.
  absl::StatusOr<TrainRunResult> Run() {
    int64_t step = run_.first_step;
    double last_loss = 0;
    const Clock::time_point loop_start = Clock::now();
    const double waited_at_start = run_.loader->wait_seconds();
    while (step < config_.steps()) {
      if (common::IsCancelled(options_.cancel)) {
        result_.cancelled = true;
        break;
      }
      absl::StatusOr<std::optional<double>> loss = TrainStep(step);
      if (!loss.ok()) return Fail(loss.status());
      if (!loss->has_value()) {
        result_.cancelled = true;
        break;
      }
      ++step;
      last_loss = **loss;
    }
    const double loop_seconds = Seconds(Clock::now() - loop_start);
    if (absl::Status s = Checkpoint(step, last_loss); !s.ok()) return Fail(s);
    result_.steps = step;
    result_.final_loss = last_loss;
    LogStreamedReads();
    if (leader_ && !result_.cancelled) {
      ROBOLOOP_RETURN_IF_ERROR(EmitFinished(loop_seconds, run_.loader->wait_seconds() - waited_at_start));
    }
    return result_;
  }

 private:
  // Trains step `step` (0-based), then records it: its event, and the validation loss and a checkpoint when they
  // are due. The step's loss, or nullopt when cancellation interrupted the step.
  absl::StatusOr<std::optional<double>> TrainStep(int64_t step) {
    const Clock::time_point start = Clock::now();
    const double waited_before = run_.loader->wait_seconds();
    absl::StatusOr<Batch> batch = batches_.Next(step);
    if (!batch.ok()) return batch.status();
    absl::StatusOr<TrainStepFigures> figures = run_.trainer->Step(BatchView(*batch), step);
    if (!figures.ok()) {
      if (common::IsCancelled(options_.cancel)) return std::nullopt;
      step_failed_with_peer_ = absl::IsUnavailable(figures.status());
      return figures.status();
    }
    const int64_t completed = step + 1;
    if (run_.trace != nullptr) ROBOLOOP_RETURN_IF_ERROR(run_.trace->Append(completed, *batch));
    const double elapsed = Seconds(Clock::now() - start);
    if (leader_ && (completed % config_.log_every() == 0 || completed == config_.steps())) {
      ROBOLOOP_RETURN_IF_ERROR(EmitStep(completed, *figures, elapsed, run_.loader->wait_seconds() - waited_before));
    }
    if (completed % ValidationInterval(config_) == 0 || completed == config_.steps()) {
      ROBOLOOP_RETURN_IF_ERROR(Validate(completed));
    }
    if (config_.checkpoint_every() > 0 && completed % config_.checkpoint_every() == 0 && completed < config_.steps()) {
      ROBOLOOP_RETURN_IF_ERROR(Checkpoint(completed, figures->loss));
    }
    return figures->loss;
  }

  absl::Status EmitStep(int64_t completed, const TrainStepFigures& figures, double elapsed, double waited) {
    v1::TrainEvent event;
    v1::TrainEvent::Step* s = event.mutable_step();
    s->set_step(completed);
    s->set_loss(figures.loss);
    s->set_lr(figures.lr);
    s->set_grad_norm(figures.grad_norm);
    s->set_samples_per_s(elapsed > 0 ? config_.batch_size() * options_.rank.world_size / elapsed : 0);
    s->set_data_stall_pct(elapsed > 0 ? 100.0 * waited / elapsed : 0);
    return run_.recorder->Emit(event);
  }

  // The validation loss after `completed` steps, emitted (rank 0 with a validation split only).
  absl::Status Validate(int64_t completed) {
    if (run_.validation.set == nullptr) return absl::OkStatus();
    ROBOLOOP_ASSIGN_OR_RETURN(validation_loss_, run_.validation.set->Loss(*run_.trainer, completed));
    validated_step_ = completed;
    v1::TrainEvent event;
    event.mutable_validation()->set_step(completed);
    event.mutable_validation()->set_loss(*validation_loss_);
    event.mutable_validation()->set_windows(run_.validation.set->windows());
    return run_.recorder->Emit(event);
  }

  // Saves and registers the state after `completed` steps (rank 0 only).
  absl::Status Checkpoint(int64_t completed, double loss) {
    if (!leader_) return absl::OkStatus();
    const std::string dir = JoinPath(JoinPath(run_.recorder->dir(), "checkpoints"), absl::StrCat("step_", completed));
    ROBOLOOP_RETURN_IF_ERROR(MakeDirs(dir));
    const std::string policy_path = JoinPath(dir, "policy.safetensors");
    const std::string state_path = JoinPath(dir, "trainer_state.pt");
    const nlohmann::json driver = {{"step", completed}, {"cursor", batches_.cursor()}, {"run_id", run_.run_id},
                                   {"seed", config_.seed()}, {"world_size", options_.rank.world_size},
                                   {"stream_block_windows", run_.loader->block_windows()}};
    ROBOLOOP_RETURN_IF_ERROR(run_.trainer->Save(policy_path, state_path, driver.dump()));
    ROBOLOOP_ASSIGN_OR_RETURN(v1::Checkpoint registered, RegisterCheckpoint(*options_.registry,
                                                                            RecordOf(completed, loss), policy_path,
                                                                            state_path));
    parent_id_ = registered.id();
    result_.checkpoint_id = registered.id();
    v1::TrainEvent event;
    v1::TrainEvent::CheckpointRegistered* c = event.mutable_checkpoint();
    c->set_step(completed);
    c->set_checkpoint_id(registered.id());
    c->set_model(registered.model());
    c->set_version(registered.version());
    return run_.recorder->Emit(event);
  }

  // What the registry records of the checkpoint after `completed` steps.
  CheckpointRecord RecordOf(int64_t completed, double loss) const {
    const Prepared& p = run_.p;
    CheckpointRecord record;
    record.model = config_.model();
    record.policy_options = p.policy_options;
    record.obs_features = p.features.obs;
    record.obs_shapes = p.features.obs_shapes;
    record.cameras = p.features.cameras;
    record.action_dim = p.features.action_dim;
    record.normalization = NormalizationToJson(p.normalization);
    record.dataset_id = p.dataset.id;
    record.parent_id = parent_id_;
    record.step = completed;
    record.metrics = {{"loss", loss}};
    if (validated_step_ == completed) record.metrics["validation_loss"] = *validation_loss_;
    record.run_id = run_.run_id;
    record.config_json = config_json_;
    record.libtorch_version = run_.runtime_info.value("libtorch_version", std::string());
    return record;
  }

  absl::Status EmitFinished(double loop_seconds, double waited) {
    v1::TrainEvent event;
    event.mutable_finished()->set_checkpoint_id(result_.checkpoint_id);
    event.mutable_finished()->set_steps(result_.steps);
    event.mutable_finished()->set_final_loss(result_.final_loss);
    event.mutable_finished()->set_data_stall_pct(loop_seconds > 0 ? 100.0 * waited / loop_seconds : 0);
    return run_.recorder->Emit(event);
  }

  // Records the failure for the launcher (as maybe a consequence of a peer's when the step failed in a collective
  // or on another rank's loss), emits `failed` (rank 0) and returns `status`.
  absl::Status Fail(const absl::Status& status) {
    RecordRankFailure(options_.rank.rank, status, step_failed_with_peer_);
    if (leader_) {
      v1::TrainEvent event;
      event.mutable_failed()->set_message(std::string(status.message()));
      (void)run_.recorder->Emit(event);
    }
    return status;
  }

  void LogStreamedReads() const {
    if (run_.training.cache == nullptr) return;
    const data::EpisodeCache::Counters read = run_.training.cache->counters();
    spdlog::info("rank {} of {}: read {} episodes ({} bytes) of {} while training", options_.rank.rank,
                 options_.rank.world_size, read.episodes_read, read.bytes_read, run_.training.cache->num_episodes());
  }

  const TrainRunOptions& options_;
  const v1::TrainConfig& config_;
  RankRun& run_;
  const bool leader_;
  LookaheadBatches batches_;
  std::string parent_id_;  // the last registered checkpoint (the run's parent before the first)
  std::string config_json_;
  std::optional<double> validation_loss_;  // the latest, computed after `validated_step_` steps
  int64_t validated_step_ = -1;
  // The trainer's step failed in a collective or on another rank's loss (Unavailable): a peer's failure may be the
  // cause. A step that failed on its own (this rank's loss, memory, a LibTorch error) is this rank's failure.
  bool step_failed_with_peer_ = false;
  TrainRunResult result_;
};
}  // namespace

absl::StatusOr<std::optional<RankInfo>> RankInfoFromEnvironment() {
  if (std::getenv("RANK") == nullptr && std::getenv("WORLD_SIZE") == nullptr) return std::nullopt;
  RankInfo info;
  ROBOLOOP_ASSIGN_OR_RETURN(info.rank, IntVariable("RANK", 0));
  ROBOLOOP_ASSIGN_OR_RETURN(info.world_size, IntVariable("WORLD_SIZE", 1));
  ROBOLOOP_ASSIGN_OR_RETURN(info.local_rank, IntVariable("LOCAL_RANK", info.rank));
  ROBOLOOP_ASSIGN_OR_RETURN(info.master_port, IntVariable("MASTER_PORT", info.master_port));
  if (const char* addr = std::getenv("MASTER_ADDR"); addr != nullptr && *addr != '\0') info.master_addr = addr;
  if (info.world_size < 1 || info.rank >= info.world_size) {
    return absl::InvalidArgumentError(absl::StrCat("RANK=", info.rank, " is not below WORLD_SIZE=", info.world_size));
  }
  return info;
}

v1::TrainConfig WithDefaults(v1::TrainConfig c) {
  if (c.action_feature().empty()) c.set_action_feature("actions");
  if (c.model().empty()) c.set_model("policy");
  FillPolicySpecDefaults(*c.mutable_policy());
  if (c.optimizer().lr() == 0) c.mutable_optimizer()->set_lr(3e-4);
  if (c.steps() == 0) c.set_steps(1000);
  if (c.batch_size() == 0) c.set_batch_size(64);
  if (c.token_budget() == 0) c.set_token_budget(8192);
  if (c.threads() == 0) c.set_threads(1);
  if (c.loader_workers() == 0) c.set_loader_workers(1);
  if (c.prefetch() == 0) c.set_prefetch(4);
  if (c.log_every() == 0) c.set_log_every(1);
  if (c.rendezvous_timeout_s() == 0) c.set_rendezvous_timeout_s(60);
  if (c.device().empty()) c.set_device("cpu");
  return c;
}

absl::StatusOr<TrainRunResult> RunTraining(const TrainRunOptions& options) {
  ROBOLOOP_CHECK(options.registry != nullptr);
  ROBOLOOP_RETURN_IF_ERROR(CheckTrainConfig(options.config));
  absl::StatusOr<std::unique_ptr<RankRun>> run = PrepareRankRun(options);
  if (!run.ok()) {
    // Unavailable: the rendezvous failed, which a peer that failed before it causes.
    RecordRankFailure(options.rank.rank, run.status(), absl::IsUnavailable(run.status()));
    return run.status();
  }
  return RankLoop(options, **run).Run();
}

}  // namespace roboloop::train
