#include "pipeline/stage_services.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "common/fs.h"
#include "common/status.h"
#include "eval/eval_service.h"
#include "pipeline/run_store.h"

namespace roboloop::pipeline {

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

std::string StageServices::DefaultName(const std::string& label) const {
  const size_t dot = label.rfind('.');
  return absl::StrCat(options_.pipeline, "-", dot == std::string::npos ? label : label.substr(dot + 1));
}

std::string StageServices::ServerDatasetPath(const StageContext& context, const std::string& suffix) const {
  return absl::StrCat("pipeline/", options_.run_id, "/", FileStem(context.label), suffix, ".hdf5");
}

absl::StatusOr<std::string> StageServices::LocalDataset(const std::string& ref) {
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Dataset dataset, clients().registry().GetDataset(ref));
  return clients().registry().CachedCopy(dataset.blob().sha256(), options_.cache_dir, ".hdf5");
}

absl::StatusOr<v1::Evaluation> StageServices::EvaluateOnService(const std::string& checkpoint,
                                                                const std::string& protocol, bool force,
                                                                const StageContext& context) {
  v1::EvaluateRequest request;
  request.set_checkpoint_ref(checkpoint);
  ROBOLOOP_RETURN_IF_ERROR(eval::SetRequestProtocol(protocol, &request));
  request.set_force(force);
  for (const std::string& sim : clients().sim_addresses()) request.add_sim_endpoints(sim);
  return clients().eval().Evaluate(request, [&](const v1::EvaluateProgress& progress) -> absl::Status {
    ROBOLOOP_RETURN_IF_ERROR(context.CheckCancelled());
    context.Report(static_cast<double>(progress.episodes_done()), static_cast<double>(progress.episodes_total()),
                   "episodes", absl::StrCat(progress.successes(), " successes", progress.cached() ? " (cached)" : ""));
    return absl::OkStatus();
  });
}

absl::StatusOr<std::string> StageServices::ServedProtocolHash(const std::string& name) {
  absl::StatusOr<v1::ProtocolInfo> info = clients().eval().GetProtocol(name);
  if (info.ok()) return info->protocol_hash();
  if (!absl::IsUnimplemented(info.status())) return info.status();
  if (!noted_unhashed_protocols_.exchange(true)) {
    std::fprintf(stderr,
                 "roboloop: note: the eval service has no GetProtocol (an older roboloop): stages naming a "
                 "protocol by name (here '%s') are answered from the cache by the name only, so an edit of the "
                 "protocol on that server is not seen (run with --no-cache after editing one)\n",
                 name.c_str());
  }
  return std::string();
}

absl::StatusOr<std::string> StageServices::RegisterFailures(const v1::Evaluation& evaluation, const std::string& name,
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
  context.Report(0, static_cast<double>(protocol.episodes()), "episodes", "recording the failed episodes");
  ROBOLOOP_ASSIGN_OR_RETURN(v1::DatasetWritten written, clients().sim().Collect(request, absl::Hours(24), context.cancel));
  if (written.episodes_run() - written.successes() != success.trials() - success.successes()) {
    return absl::InternalError(absl::StrCat("rolling out ", evaluation.checkpoint_id(), " again failed ",
                                            written.episodes_run() - written.successes(), " episodes, its evaluation ",
                                            success.trials() - success.successes(), ": the policy is not deterministic"));
  }
  return written.dataset_id();
}

}  // namespace roboloop::pipeline
