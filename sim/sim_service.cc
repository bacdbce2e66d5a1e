#include "sim/sim_service.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "common/fs.h"
#include "common/status.h"
#include "sim/checkpoint_policy.h"
#include "sim/collect.h"
#include "sim/random_policy.h"
#include "sim/task_definition_hash.h"

namespace roboloop::sim {
namespace {

// Decrements the active-rollout counter when a rollout ends, however it ends.
class ActiveRolloutScope {
 public:
  explicit ActiveRolloutScope(std::atomic<int>* counter) : counter_(counter) { ++*counter_; }
  ~ActiveRolloutScope() { --*counter_; }

 private:
  std::atomic<int>* counter_;
};

// Forwards engine episodes to the caller's callback in wire form.
class CallbackSink : public EpisodeSink {
 public:
  explicit CallbackSink(const EpisodeCallback& callback) : callback_(callback) {}
  absl::Status OnEpisode(const EpisodeRecord& record, const Trajectory* trajectory) override {
    return callback_(EpisodeRecordToProto(record, trajectory));
  }

 private:
  const EpisodeCallback& callback_;
};

ScaleRange ScaleFromProto(const v1::ScaleRange& proto) {
  if (proto.low() == 0 && proto.high() == 0) return ScaleRange();
  return ScaleRange{proto.low(), proto.high()};
}

absl::Status ValidateRange(const v1::RolloutRequest& r, const SimServiceHandler::Options& o) {
  if (r.num_episodes() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_episodes must be >= 1, got ", r.num_episodes()));
  }
  if (r.first_episode() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("first_episode must be >= 0, got ", r.first_episode()));
  }
  if (r.envs() < 0 || r.envs() > o.max_envs) {
    return absl::InvalidArgumentError(
        absl::StrCat("envs must be within [0, ", o.max_envs, "], got ", r.envs()));
  }
  if (r.threads() < 0 || r.threads() > o.max_threads) {
    return absl::InvalidArgumentError(
        absl::StrCat("threads must be within [0, ", o.max_threads, "], got ", r.threads()));
  }
  if (r.max_steps() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("max_steps must be >= 0, got ", r.max_steps()));
  }
  // Checked whatever the policy, though only checkpoints use it.
  if (!r.chunk_execution().empty()) return ParseChunkExecution(r.chunk_execution()).status();
  return absl::OkStatus();
}

v1::DatasetWritten DatasetWrittenToProto(const DatasetSummary& summary, const std::string& path) {
  v1::DatasetWritten out;
  out.set_path(path);
  out.set_sha256(summary.sha256);
  out.set_episodes_run(summary.episodes_run);
  out.set_episodes_written(summary.episodes_written);
  out.set_successes(summary.successes);
  out.set_total_steps(summary.total_steps);
  return out;
}

v1::TaskInfo DescribeTask(const Task& task, const std::string& summary) {
  v1::TaskInfo info;
  info.set_name(task.name());
  info.set_summary(summary);
  info.set_description(task.description());
  for (const ArraySpec& key : task.obs_spec().keys) {
    v1::ObsKey* out = info.add_obs_keys();
    out->set_name(key.name);
    for (int dim : key.shape) out->add_shape(dim);
  }
  for (const CameraSpec& camera : task.obs_spec().cameras) {
    v1::CameraObs* out = info.add_cameras();
    out->set_name(camera.name);
    out->set_camera(camera.camera);
    out->set_width(camera.width);
    out->set_height(camera.height);
  }
  for (float low : task.action_spec().low) info.add_action_low(low);
  for (float high : task.action_spec().high) info.add_action_high(high);
  info.set_max_steps(task.max_steps());
  info.set_control_dt(task.control_dt());
  info.set_has_expert(task.MakeExpert().ok());
  info.set_definition_hash(TaskDefinitionHash(task, summary));
  return info;
}

// Metadata of a dataset the server registers: what wrote it.
std::string WrittenMetadata(const std::string& operation, const std::string& task, const std::string& policy,
                            const v1::DatasetWritten& written) {
  return nlohmann::json{{"source", absl::StrCat("sim ", operation)},
                        {"task", task},
                        {"policy", policy},
                        {"episodes_run", written.episodes_run()},
                        {"episodes_written", written.episodes_written()},
                        {"successes", written.successes()},
                        {"total_steps", written.total_steps()}}
      .dump();
}

}  // namespace

absl::StatusOr<std::unique_ptr<SimServiceHandler>> SimServiceHandler::Create(const Options& options) {
  if (options.registry == nullptr) return absl::InvalidArgumentError("SimServiceHandler needs a task registry");
  if (options.max_envs < 1 || options.max_threads < 1) {
    return absl::InvalidArgumentError("SimServiceHandler: max_envs and max_threads must be >= 1");
  }
  if (options.checkpoints != nullptr && options.checkpoint_cache_dir.empty()) {
    return absl::InvalidArgumentError("SimServiceHandler: a registry for checkpoints needs checkpoint_cache_dir");
  }
  return std::unique_ptr<SimServiceHandler>(new SimServiceHandler(options));
}

absl::StatusOr<v1::ListTasksResponse> SimServiceHandler::ListTasks() const {
  v1::ListTasksResponse response;
  for (const std::string& name : options_.registry->Names()) {
    ROBOLOOP_ASSIGN_OR_RETURN(auto task, options_.registry->Create(name));
    ROBOLOOP_ASSIGN_OR_RETURN(std::string summary, options_.registry->Summary(name));
    *response.add_tasks() = DescribeTask(*task, summary);
  }
  (*response.mutable_libraries())["mujoco"] = mj_versionString();
  if (options_.checkpoints != nullptr) {
    for (const auto& [name, version] : InferenceLibraries()) (*response.mutable_libraries())[name] = version;
  }
  return response;
}

absl::StatusOr<RolloutOptions> SimServiceHandler::ValidatedRolloutOptions(
    const v1::RolloutRequest& request, const Task& task, const common::CancellationToken* cancel) const {
  RolloutOptions options;
  options.base_seed = request.base_seed();
  options.first_episode = request.first_episode();
  options.num_episodes = request.num_episodes();
  options.num_envs = std::max(1, request.envs());
  options.num_threads = std::max(1, request.threads());
  options.max_steps = request.max_steps();
  options.record_trajectories = request.record_trajectories();
  options.overlap_inference = request.overlap_inference();
  options.robustness = RobustnessFromProto(request.robustness());
  options.cancel = cancel;
  ROBOLOOP_RETURN_IF_ERROR(Annotate(ValidateRobustness(options.robustness, task.obs_spec()),
                                    absl::StrCat("task ", task.name())));
  return options;
}

absl::Status SimServiceHandler::Rollout(const v1::RolloutRequest& request,
                                        const EpisodeCallback& on_episode,
                                        const common::CancellationToken* cancel) const {
  ActiveRolloutScope scope(&active_rollouts_);
  ROBOLOOP_RETURN_IF_ERROR(ValidateRange(request, options_));
  ROBOLOOP_ASSIGN_OR_RETURN(auto task, options_.registry->Create(request.task()));
  ROBOLOOP_ASSIGN_OR_RETURN(RolloutOptions options, ValidatedRolloutOptions(request, *task, cancel));
  ROBOLOOP_ASSIGN_OR_RETURN(auto policy, MakePolicy(request, *task));
  ROBOLOOP_ASSIGN_OR_RETURN(auto engine, RolloutEngine::Create(task.get(), options));
  CallbackSink sink(on_episode);
  return engine->Run(*policy, sink);
}

absl::StatusOr<std::string> SimServiceHandler::ResolveDatasetPath(const std::string& path) const {
  if (path.empty()) return absl::InvalidArgumentError("a dataset path must be given");
  if (options_.dataset_dir.empty()) return path;
  ROBOLOOP_RETURN_IF_ERROR(Annotate(CheckSafeRelativePath(path),
                                    absl::StrCat("dataset path under ", options_.dataset_dir)));
  const std::string resolved = JoinPath(options_.dataset_dir, path);
  ROBOLOOP_RETURN_IF_ERROR(MakeDirs(ParentDir(resolved)));
  return resolved;
}

absl::StatusOr<v1::DatasetWritten> SimServiceHandler::Collect(const v1::CollectRequest& request,
                                                              const common::CancellationToken* cancel) const {
  ActiveRolloutScope scope(&active_rollouts_);
  const v1::RolloutRequest& rollout = request.rollout();
  ROBOLOOP_RETURN_IF_ERROR(ValidateRange(rollout, options_));
  ROBOLOOP_ASSIGN_OR_RETURN(auto task, options_.registry->Create(rollout.task()));
  CollectOptions options;
  ROBOLOOP_ASSIGN_OR_RETURN(options.rollout, ValidatedRolloutOptions(rollout, *task, cancel));
  ROBOLOOP_ASSIGN_OR_RETURN(options.output_path, ResolveDatasetPath(request.output_path()));
  options.overwrite = request.overwrite();
  options.success_only = request.success_only();
  options.failures_only = request.failures_only();
  if (options.success_only && options.failures_only) {
    return absl::InvalidArgumentError("collect: success_only and failures_only exclude each other");
  }
  if (!request.register_as().empty() && options_.checkpoints == nullptr) {
    return absl::FailedPreconditionError("collect: register_as needs a server with a registry");
  }
  options.policy_reference = rollout.policy();
  options.policy_seed = rollout.policy_seed();
  ROBOLOOP_ASSIGN_OR_RETURN(auto policy, MakePolicy(rollout, *task));
  ROBOLOOP_ASSIGN_OR_RETURN(DatasetSummary summary, CollectDataset(*task, *policy, options));
  v1::DatasetWritten written = DatasetWrittenToProto(summary, request.output_path());
  if (request.register_as().empty()) return written;
  std::vector<std::string> parents(request.parent_refs().begin(), request.parent_refs().end());
  ROBOLOOP_RETURN_IF_ERROR(RegisterWritten(summary.path, request.register_as(), parents,
                                           WrittenMetadata("collect", rollout.task(), rollout.policy(), written),
                                           &written));
  return written;
}

absl::Status SimServiceHandler::RegisterWritten(const std::string& path, const std::string& name,
                                                const std::vector<std::string>& parents,
                                                const std::string& metadata_json,
                                                v1::DatasetWritten* written) const {
  ROBOLOOP_ASSIGN_OR_RETURN(v1::BlobInfo blob, options_.checkpoints->UploadFile(path));
  v1::RegisterDatasetRequest request;
  request.set_name(name);
  request.set_blob_sha256(blob.sha256());
  request.set_metadata_json(metadata_json);
  for (const std::string& parent : parents) request.add_parent_refs(parent);
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Dataset dataset, options_.checkpoints->RegisterDataset(request));
  written->set_dataset_id(dataset.id());
  written->set_dataset_ref(absl::StrCat(dataset.name(), ":v", dataset.version()));
  return absl::OkStatus();
}

absl::StatusOr<std::string> SimServiceHandler::FetchDataset(const std::string& ref) const {
  if (options_.checkpoints == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("dataset reference '", ref, "' needs a server with a registry"));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Dataset dataset, options_.checkpoints->GetDataset(ref));
  const std::string dir = options_.dataset_cache_dir.empty() ? JoinPath(options_.checkpoint_cache_dir, "datasets")
                                                             : options_.dataset_cache_dir;
  return options_.checkpoints->CachedCopy(dataset.blob().sha256(), dir, ".hdf5");
}

absl::StatusOr<v1::DatasetWritten> SimServiceHandler::Relabel(const v1::RelabelRequest& request) const {
  if (!request.policy().empty() && request.policy() != "expert") {
    return absl::UnimplementedError(absl::StrCat(
        "relabelling with policy '", request.policy(), "' is not served: only \"expert\""));
  }
  if (!request.register_as().empty() && options_.checkpoints == nullptr) {
    return absl::FailedPreconditionError("relabel: register_as needs a server with a registry");
  }
  RelabelOptions options;
  if (request.input_ref().empty()) {
    ROBOLOOP_ASSIGN_OR_RETURN(options.input_path, ResolveDatasetPath(request.input_path()));
  } else {
    ROBOLOOP_ASSIGN_OR_RETURN(options.input_path, FetchDataset(request.input_ref()));
  }
  if (options_.screen_dataset) ROBOLOOP_RETURN_IF_ERROR(options_.screen_dataset(options.input_path));
  ROBOLOOP_ASSIGN_OR_RETURN(options.output_path, ResolveDatasetPath(request.output_path()));
  options.overwrite = request.overwrite();
  std::string task_name = request.task();
  if (task_name.empty()) {
    ROBOLOOP_ASSIGN_OR_RETURN(task_name, DatasetTaskName(options.input_path));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(auto task, options_.registry->Create(task_name));
  ROBOLOOP_ASSIGN_OR_RETURN(auto expert, task->MakeExpert());
  ROBOLOOP_ASSIGN_OR_RETURN(DatasetSummary summary, RelabelDataset(*task, *expert, options));
  v1::DatasetWritten written = DatasetWrittenToProto(summary, request.output_path());
  if (request.register_as().empty()) return written;
  std::vector<std::string> parents;
  if (!request.input_ref().empty()) parents.push_back(request.input_ref());
  ROBOLOOP_RETURN_IF_ERROR(RegisterWritten(summary.path, request.register_as(), parents,
                                           WrittenMetadata("relabel", task_name, "expert", written), &written));
  return written;
}

absl::StatusOr<std::unique_ptr<Policy>> SimServiceHandler::MakePolicy(const v1::RolloutRequest& request,
                                                                     const Task& task) const {
  const std::string& reference = request.policy();
  if (!IsCheckpointReference(reference) || options_.checkpoints == nullptr) {
    return MakeNamedPolicy(reference, request.policy_seed(), task);
  }
  CheckpointPolicyOptions options;
  options.cache_dir = options_.checkpoint_cache_dir;
  options.batch_invariant = !request.has_batch_invariant() || request.batch_invariant();
  if (!request.chunk_execution().empty()) {
    ROBOLOOP_ASSIGN_OR_RETURN(options.execution, ParseChunkExecution(request.chunk_execution()));
  }
  return LoadCheckpointPolicy(*options_.checkpoints, reference, options, task.obs_spec(), task.action_spec());
}

absl::StatusOr<std::unique_ptr<Policy>> MakeNamedPolicy(const std::string& reference,
                                                        uint64_t seed, const Task& task) {
  if (reference == "expert") return task.MakeExpert();
  if (reference == "random") return std::unique_ptr<Policy>(new RandomPolicy(task, seed));
  if (reference.empty()) {
    return absl::InvalidArgumentError(
        "policy must be set: \"expert\", \"random\" or a policy reference");
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "policy reference '", reference,
      "' is a checkpoint reference, but no registry is configured to resolve it (only \"expert\" "
      "and \"random\" are served without one)"));
}

bool IsCheckpointReference(const std::string& policy) {
  return !policy.empty() && policy != "expert" && policy != "random";
}

RobustnessOptions RobustnessFromProto(const v1::RobustnessOptions& proto) {
  RobustnessOptions options;
  for (const auto& [key, std] : proto.obs_noise_std()) options.obs_noise_std[key] = std;
  options.action_noise_std = proto.action_noise_std();
  options.action_delay = proto.action_delay();
  options.body_mass = ScaleFromProto(proto.body_mass());
  options.geom_friction = ScaleFromProto(proto.geom_friction());
  options.actuator_gain = ScaleFromProto(proto.actuator_gain());
  return options;
}

v1::EpisodeRecord EpisodeRecordToProto(const EpisodeRecord& r, const Trajectory* trajectory) {
  v1::EpisodeRecord out;
  out.set_task(r.task);
  out.set_seed(r.seed);
  out.set_episode_index(r.episode_index);
  out.set_episode_return(r.episode_return);
  out.set_length(r.length);
  out.set_success(r.success);
  out.set_end_reason(EndReasonName(r.end_reason));
  out.set_end_detail(r.end_detail);
  out.set_wall_time_s(r.wall_time_s);
  out.set_state_hash_chain(r.state_hash_chain);
  out.set_final_state_hash(r.final_state_hash);
  if (trajectory != nullptr) {
    v1::Trajectory* t = out.mutable_trajectory();
    t->mutable_obs()->Add(trajectory->obs.begin(), trajectory->obs.end());
    t->mutable_actions()->Add(trajectory->actions.begin(), trajectory->actions.end());
    t->mutable_rewards()->Add(trajectory->rewards.begin(), trajectory->rewards.end());
    t->mutable_states()->Add(trajectory->states.begin(), trajectory->states.end());
    t->mutable_final_obs()->Add(trajectory->final_obs.begin(), trajectory->final_obs.end());
  }
  return out;
}

absl::StatusOr<EpisodeRecord> EpisodeRecordFromProto(const v1::EpisodeRecord& p) {
  EpisodeRecord r;
  r.task = p.task();
  r.seed = p.seed();
  r.episode_index = p.episode_index();
  r.episode_return = p.episode_return();
  r.length = p.length();
  r.success = p.success();
  bool known = false;
  for (EndReason reason : {EndReason::kNone, EndReason::kTruncated, EndReason::kTerminated,
                           EndReason::kInvalidAction, EndReason::kUnstable, EndReason::kInvalidReward,
                           EndReason::kInvalidObservation, EndReason::kTaskError}) {
    if (p.end_reason() == EndReasonName(reason)) {
      r.end_reason = reason;
      known = true;
    }
  }
  if (!known) {
    return absl::InvalidArgumentError(
        absl::StrCat("episode record: unknown end_reason '", p.end_reason(), "'"));
  }
  r.end_detail = p.end_detail();
  r.wall_time_s = p.wall_time_s();
  r.state_hash_chain = p.state_hash_chain();
  r.final_state_hash = p.final_state_hash();
  return r;
}

}  // namespace roboloop::sim
