#include "pipeline/stage_executor.h"

#include <thread>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/fs.h"
#include "common/status.h"
#include "data/tools.h"
#include "eval/eval_service.h"
#include "eval/metrics.h"
#include "pipeline/report.h"

namespace roboloop::pipeline {
namespace {

std::string Number(double value) { return absl::StrFormat("%.6f", value); }

// Success and return of an evaluation as stage outputs.
StageOutputs EvaluationOutputs(const v1::Evaluation& evaluation) {
  const v1::Aggregates& a = evaluation.aggregates();
  return {{"evaluation", evaluation.id()},
          {"success.rate", Number(a.success().rate())},
          {"success.lower", Number(a.success().interval().low())},
          {"success.upper", Number(a.success().interval().high())},
          {"return.mean", Number(a.episode_return().mean())},
          {"return.lower", Number(a.episode_return().interval().low())},
          {"return.upper", Number(a.episode_return().interval().high())},
          {"failures", ""}};
}

// A collection of `count` episodes from `first` of `task` with `policy`, 8 envs.
v1::CollectRequest CollectRequestFor(const std::string& task, const std::string& policy, uint64_t base_seed,
                                     int64_t first, int64_t count, int max_steps, int threads) {
  v1::CollectRequest request;
  v1::RolloutRequest* rollout = request.mutable_rollout();
  rollout->set_task(task);
  rollout->set_policy(policy);
  rollout->set_base_seed(base_seed);
  rollout->set_first_episode(first);
  rollout->set_num_episodes(count);
  rollout->set_max_steps(max_steps);
  rollout->set_envs(8);
  rollout->set_threads(threads);
  return request;
}

absl::Status CancelledIfRaised(const StageContext& context) {
  if (context.cancel != nullptr && context.cancel->load()) return absl::CancelledError("the stage was cancelled");
  return absl::OkStatus();
}

void ReportProgress(const StageContext& context, double done, double total, const std::string& unit,
            const std::string& note = "") {
  if (context.progress) context.progress(StageProgress{done, total, unit, note});
}

}  // namespace

std::string ServiceStageExecutor::DefaultName(const std::string& label) const {
  const size_t dot = label.rfind('.');
  return absl::StrCat(options_.pipeline, "-", dot == std::string::npos ? label : label.substr(dot + 1));
}

std::string ServiceStageExecutor::ServerDatasetPath(const StageContext& context, const std::string& suffix) const {
  return absl::StrCat("pipeline/", options_.run_id, "/", FileStem(context.label), suffix, ".hdf5");
}

absl::StatusOr<StageOutputs> ServiceStageExecutor::Run(const v1::Stage& stage, const StageContext& context) {
  const std::string& kind = stage.kind();
  if (kind == "collect") return Collect(stage, context);
  if (kind == "relabel") return Relabel(stage, context);
  if (kind == "merge") return Merge(stage, context);
  if (kind == "train") return Train(stage, context);
  if (kind == "evaluate") return Evaluate(stage, context);
  if (kind == "compare") return Compare(stage, context);
  if (kind == "promote") return Promote(stage, context);
  if (kind == "report") return Report(stage, context);
  return absl::InvalidArgumentError(absl::StrCat("stage ", context.label, ": no executor for kind '", kind, "'"));
}

absl::StatusOr<StageOutputs> ServiceStageExecutor::Collect(const v1::Stage& stage, const StageContext& context) {
  const v1::CollectStage& c = stage.collect();
  v1::CollectRequest request = CollectRequestFor(c.task(), c.policy().empty() ? "expert" : c.policy(), c.base_seed(),
                                                 c.first_episode(), c.episodes(), c.max_steps(), options_.sim_threads);
  request.set_success_only(c.success_only());
  request.set_overwrite(true);
  request.set_output_path(ServerDatasetPath(context, ""));
  request.set_register_as(c.dataset_name().empty() ? DefaultName(context.label) : c.dataset_name());
  ReportProgress(context, 0, static_cast<double>(c.episodes()), "episodes", "collecting");
  ROBOLOOP_ASSIGN_OR_RETURN(v1::DatasetWritten written,
                            clients_->sim().Collect(request, absl::Hours(24), context.cancel));
  ReportProgress(context, static_cast<double>(written.episodes_run()), static_cast<double>(c.episodes()), "episodes",
         absl::StrCat(written.successes(), " successes, registered ", written.dataset_ref()));
  return StageOutputs{{"dataset", written.dataset_id()}};
}

absl::StatusOr<StageOutputs> ServiceStageExecutor::Relabel(const v1::Stage& stage, const StageContext& context) {
  const v1::RelabelStage& r = stage.relabel();
  if (r.dataset().empty()) {
    ReportProgress(context, 0, 0, "demos", "nothing to relabel (no failed episodes)");
    return StageOutputs{{"dataset", ""}};
  }
  v1::RelabelRequest request;
  request.set_input_ref(r.dataset());
  request.set_task(r.task());
  request.set_overwrite(true);
  request.set_output_path(ServerDatasetPath(context, ""));
  request.set_register_as(r.dataset_name().empty() ? DefaultName(context.label) : r.dataset_name());
  ROBOLOOP_ASSIGN_OR_RETURN(v1::DatasetWritten written,
                            clients_->sim().Relabel(request, absl::Hours(24), context.cancel));
  ReportProgress(context, static_cast<double>(written.episodes_written()), static_cast<double>(written.episodes_written()),
         "demos", absl::StrCat("relabelled by the expert, registered ", written.dataset_ref()));
  return StageOutputs{{"dataset", written.dataset_id()}};
}

absl::StatusOr<std::string> ServiceStageExecutor::LocalDataset(const std::string& ref) {
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Dataset dataset, clients_->registry().GetDataset(ref));
  return clients_->registry().CachedCopy(dataset.blob().sha256(), options_.cache_dir, ".hdf5");
}

absl::StatusOr<StageOutputs> ServiceStageExecutor::Merge(const v1::Stage& stage, const StageContext& context) {
  std::vector<std::string> refs;
  for (const std::string& ref : stage.merge().datasets()) {
    if (!ref.empty()) refs.push_back(ref);
  }
  if (refs.empty()) return absl::InvalidArgumentError(absl::StrCat("stage ", context.label, ": no dataset to merge"));
  if (refs.size() == 1) {
    ReportProgress(context, 1, 1, "datasets", "one input: passed through");
    return StageOutputs{{"dataset", refs.front()}};
  }
  data::MergeOptions merge;
  for (const std::string& ref : refs) {
    ROBOLOOP_RETURN_IF_ERROR(CancelledIfRaised(context));
    ROBOLOOP_ASSIGN_OR_RETURN(std::string path, LocalDataset(ref));
    merge.inputs.push_back(path);
  }
  ROBOLOOP_RETURN_IF_ERROR(MakeDirs(options_.run_dir));
  merge.output = JoinPath(options_.run_dir, FileStem(context.label) + ".hdf5");
  merge.overwrite = true;
  ROBOLOOP_ASSIGN_OR_RETURN(data::DatasetLayout layout, data::MergeDatasets(merge));
  ROBOLOOP_ASSIGN_OR_RETURN(v1::BlobInfo blob, clients_->registry().UploadFile(merge.output));
  v1::RegisterDatasetRequest request;
  request.set_name(stage.merge().dataset_name().empty() ? DefaultName(context.label) : stage.merge().dataset_name());
  request.set_blob_sha256(blob.sha256());
  request.set_metadata_json(nlohmann::json{{"source", "pipeline merge"}, {"inputs", refs}}.dump());
  for (const std::string& ref : refs) request.add_parent_refs(ref);
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Dataset dataset, clients_->registry().RegisterDataset(request));
  ReportProgress(context, static_cast<double>(refs.size()), static_cast<double>(refs.size()), "datasets",
         absl::StrCat(layout.demos.size(), " demos, registered ", dataset.name(), ":v", dataset.version()));
  return StageOutputs{{"dataset", dataset.id()}};
}

absl::StatusOr<StageOutputs> ServiceStageExecutor::Train(const v1::Stage& stage, const StageContext& context) {
  v1::TrainRequest request;
  *request.mutable_config() = stage.train();
  if (request.config().model().empty()) request.mutable_config()->set_model(DefaultName(context.label));
  request.set_world_size(std::max(1, stage.ranks()));
  const double total = static_cast<double>(stage.train().steps() > 0 ? stage.train().steps() : 1000);
  absl::Mutex mu;
  std::string run_id, checkpoint, failure;
  std::atomic<bool> done{false};
  // Cancellation stops the run through TrainService.Cancel (its ranks checkpoint and exit).
  std::thread canceller([&] {
    while (!done.load()) {
      if (context.cancel->load()) {
        std::string id;
        {
          absl::MutexLock lock(&mu);
          id = run_id;
        }
        if (!id.empty()) {
          (void)clients_->train().Cancel(id);
          return;
        }
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
  });
  absl::Status status = clients_->train().Train(request, [&](const v1::TrainEvent& event) {
    absl::MutexLock lock(&mu);
    run_id = event.run_id();
    if (event.has_step()) {
      ReportProgress(context, static_cast<double>(event.step().step()), total, "steps",
             absl::StrFormat("loss %.4g, %.0f samples/s", event.step().loss(), event.step().samples_per_s()));
    } else if (event.has_finished()) {
      checkpoint = event.finished().checkpoint_id();
    } else if (event.has_failed()) {
      failure = event.failed().message();
    }
  });
  done.store(true);
  canceller.join();
  ROBOLOOP_RETURN_IF_ERROR(CancelledIfRaised(context));
  ROBOLOOP_RETURN_IF_ERROR(status);
  if (checkpoint.empty()) {
    return absl::InternalError(absl::StrCat("training run ", run_id, " ended without a checkpoint", failure.empty() ? "" : ": ", failure));
  }
  return StageOutputs{{"checkpoint", checkpoint}, {"run", run_id}};
}

absl::StatusOr<v1::Evaluation> ServiceStageExecutor::EvaluateOnService(const std::string& checkpoint,
                                                                       const std::string& protocol, bool force,
                                                                       const StageContext& context) {
  v1::EvaluateRequest request;
  request.set_checkpoint_ref(checkpoint);
  request.set_protocol_name(protocol);
  request.set_force(force);
  for (const std::string& sim : clients_->sim_addresses()) request.add_sim_endpoints(sim);
  return clients_->eval().Evaluate(request, [&](const v1::EvaluateProgress& progress) -> absl::Status {
    ROBOLOOP_RETURN_IF_ERROR(CancelledIfRaised(context));
    ReportProgress(context, static_cast<double>(progress.episodes_done()), static_cast<double>(progress.episodes_total()),
           "episodes", absl::StrCat(progress.successes(), " successes", progress.cached() ? " (cached)" : ""));
    return absl::OkStatus();
  });
}

absl::StatusOr<std::string> ServiceStageExecutor::RegisterFailures(const v1::Evaluation& evaluation,
                                                                  const std::string& name,
                                                                  const StageContext& context) {
  const v1::RateEstimate& success = evaluation.aggregates().success();
  if (success.successes() == success.trials()) return std::string();
  const v1::Protocol& protocol = evaluation.protocol();
  v1::CollectRequest request =
      CollectRequestFor(protocol.task(), evaluation.checkpoint_id(), protocol.base_seed(), protocol.seed_start(),
                        protocol.episodes(), protocol.max_steps(), options_.sim_threads);
  v1::RolloutRequest* rollout = request.mutable_rollout();
  *rollout->mutable_robustness() = protocol.robustness();
  ROBOLOOP_ASSIGN_OR_RETURN(std::string chunk, eval::ChunkExecutionText(protocol.execution().chunk()));
  rollout->set_chunk_execution(chunk);
  if (protocol.execution().has_batch_invariant()) rollout->set_batch_invariant(protocol.execution().batch_invariant());
  request.set_failures_only(true);
  request.set_overwrite(true);
  request.set_output_path(ServerDatasetPath(context, "-failures"));
  request.set_register_as(name);
  if (!evaluation.dataset_id().empty()) request.add_parent_refs(evaluation.dataset_id());
  ReportProgress(context, 0, static_cast<double>(protocol.episodes()), "episodes", "recording the failed episodes");
  ROBOLOOP_ASSIGN_OR_RETURN(v1::DatasetWritten written, clients_->sim().Collect(request, absl::Hours(24), context.cancel));
  if (written.episodes_run() - written.successes() != success.trials() - success.successes()) {
    return absl::InternalError(absl::StrCat("rolling out ", evaluation.checkpoint_id(), " again failed ",
                                            written.episodes_run() - written.successes(), " episodes, its evaluation ",
                                            success.trials() - success.successes(), ": the policy is not deterministic"));
  }
  return written.dataset_id();
}

absl::StatusOr<StageOutputs> ServiceStageExecutor::Evaluate(const v1::Stage& stage, const StageContext& context) {
  const v1::EvaluateStage& e = stage.evaluate();
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Evaluation evaluation, EvaluateOnService(e.checkpoint(), e.protocol(), e.force(), context));
  StageOutputs outputs = EvaluationOutputs(evaluation);
  if (e.keep_failures()) {
    ROBOLOOP_ASSIGN_OR_RETURN(outputs["failures"],
                              RegisterFailures(evaluation, DefaultName(context.label) + "-failures", context));
  }
  return outputs;
}

absl::StatusOr<StageOutputs> ServiceStageExecutor::Compare(const v1::Stage& stage, const StageContext& context) {
  const v1::CompareStage& c = stage.compare();
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Evaluation candidate, EvaluateOnService(c.candidate(), c.protocol(), false, context));
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Evaluation baseline, EvaluateOnService(c.baseline(), c.protocol(), false, context));
  v1::CompareRequest request;
  request.set_candidate(candidate.id());
  request.set_baseline(baseline.id());
  request.set_protocol_hash(candidate.protocol_hash());
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Comparison comparison, clients_->eval().Compare(request));
  return StageOutputs{{"verdict", eval::VerdictName(comparison.verdict())}, {"p_value", Number(comparison.mcnemar_p())}};
}

absl::StatusOr<StageOutputs> ServiceStageExecutor::Promote(const v1::Stage& stage, const StageContext& context) {
  const v1::PromoteStage& p = stage.promote();
  v1::PromoteCandidateRequest request;
  request.set_model(p.model());
  request.set_candidate(p.candidate());
  request.set_protocol_name(p.protocol());
  for (const std::string& sim : clients_->sim_addresses()) request.add_sim_endpoints(sim);
  ReportProgress(context, 0, 0, "", "evaluating candidate and champion");
  ROBOLOOP_ASSIGN_OR_RETURN(v1::PromotionDecision decision,
                            clients_->eval().Promote(request, absl::Hours(24), context.cancel));
  ReportProgress(context, 1, 1, "", decision.reason());
  return StageOutputs{{"champion", decision.promoted() ? decision.candidate_id() : decision.champion_id()},
                      {"promoted", decision.promoted() ? "true" : "false"}};
}

absl::StatusOr<StageOutputs> ServiceStageExecutor::Report(const v1::Stage& stage, const StageContext& context) {
  const v1::ReportStage& r = stage.report();
  ReportRequest request;
  request.model = r.model();
  request.title = absl::StrCat(options_.pipeline, " — ", r.model());
  request.output = r.output().empty() ? FileStem(context.label) + ".html" : r.output();
  if (request.output.front() != '/') request.output = JoinPath(options_.run_dir, request.output);
  request.train_root = options_.train_root;
  request.animation.tasks = options_.tasks;
  request.animation.cache_dir = options_.policy_cache_dir;
  ROBOLOOP_ASSIGN_OR_RETURN(std::string path, WriteModelReport(*clients_, request));
  ReportProgress(context, 1, 1, "", absl::StrCat("wrote ", path));
  return StageOutputs{{"path", path}};
}

}  // namespace roboloop::pipeline
