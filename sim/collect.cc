#include "sim/collect.h"

#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/sha256.h"
#include "common/status.h"
#include "data/dataset_writer.h"
#include "nlohmann/json.hpp"
#include "sim/physics_state.h"

namespace roboloop::sim {
namespace {

nlohmann::json ScaleToJson(const ScaleRange& range) { return {range.low, range.high}; }

nlohmann::json RobustnessToJson(const RobustnessOptions& r) {
  nlohmann::json noise = nlohmann::json::object();
  for (const auto& [key, std] : r.obs_noise_std) noise[key] = std;
  return {{"obs_noise_std", noise},
          {"action_noise_std", r.action_noise_std},
          {"action_delay", r.action_delay},
          {"body_mass", ScaleToJson(r.body_mass)},
          {"geom_friction", ScaleToJson(r.geom_friction)},
          {"actuator_gain", ScaleToJson(r.actuator_gain)}};
}

// One episode's trajectory as robomimic features.
data::Episode TrajectoryToEpisode(const Task& task, const Trajectory& t) {
  const int64_t steps = static_cast<int64_t>(t.dones.size());
  const int obs_size = task.obs_spec().size();
  data::Episode episode;
  for (const ArraySpec& key : task.obs_spec().keys) {
    std::vector<int64_t> shape = {steps};
    shape.insert(shape.end(), key.shape.begin(), key.shape.end());
    const int offset = task.obs_spec().offset(key.name);
    std::vector<float> values;
    values.reserve(static_cast<size_t>(steps) * key.size());
    for (int64_t row = 0; row < steps; ++row) {
      const float* begin = &t.obs[static_cast<size_t>(row) * obs_size + offset];
      values.insert(values.end(), begin, begin + key.size());
    }
    episode["obs/" + key.name] = data::Array::From<float>(std::move(shape), values);
  }
  AddCameraFrames(task.obs_spec(), t.images, steps, &episode);
  episode["actions"] = data::Array::From<float>({steps, task.action_spec().size()}, t.actions);
  episode["rewards"] = data::Array::From<float>({steps}, t.rewards);
  episode["dones"] = data::Array::From<uint8_t>({steps}, t.dones);
  episode["states"] = data::Array::From<double>({steps, PhysicsStateSize(task.model())}, t.states);
  return episode;
}

// Writes finished episodes in episode-index order (completion order depends on the number of
// envs), holding back those that finish before their predecessors.
class DatasetSink : public EpisodeSink {
 public:
  DatasetSink(const Task& task, const CollectOptions& options, data::DatasetWriter* writer)
      : task_(task), options_(options), writer_(writer),
        next_index_(options.rollout.first_episode) {}

  absl::Status OnEpisode(const EpisodeRecord& record, const Trajectory* trajectory) override {
    ROBOLOOP_CHECK(trajectory != nullptr);
    ++summary_.episodes_run;
    summary_.successes += record.success ? 1 : 0;
    const bool wanted = record.success ? !options_.failures_only : !options_.success_only;
    const bool keep = wanted && !trajectory->dones.empty();
    pending_[record.episode_index] =
        keep ? TrajectoryToEpisode(task_, *trajectory) : data::Episode();
    return WriteReady();
  }

  const DatasetSummary& summary() const { return summary_; }

 private:
  absl::Status WriteReady() {
    for (auto it = pending_.begin(); it != pending_.end() && it->first == next_index_;
         it = pending_.erase(it), ++next_index_) {
      if (it->second.empty()) continue;
      ROBOLOOP_RETURN_IF_ERROR(
          Annotate(writer_->WriteEpisode(it->second).status(), absl::StrCat("episode ", it->first)));
      ++summary_.episodes_written;
      summary_.total_steps += it->second.at("actions").Steps();
    }
    return absl::OkStatus();
  }

  const Task& task_;
  const CollectOptions& options_;
  data::DatasetWriter* writer_;
  int64_t next_index_;
  std::map<int64_t, data::Episode> pending_;
  DatasetSummary summary_;
};

// The task's cameras as [{name, camera, width, height}], in layout order (training reads their
// order and MJCF cameras from it).
nlohmann::json CamerasJson(const ObsSpec& spec) {
  nlohmann::json cameras = nlohmann::json::array();
  for (const CameraSpec& c : spec.cameras) {
    cameras.push_back({{"name", c.name}, {"camera", c.camera}, {"width", c.width}, {"height", c.height}});
  }
  return cameras;
}

}  // namespace

void AddCameraFrames(const ObsSpec& spec, const std::vector<uint8_t>& images, int64_t steps, data::Episode* episode) {
  const int image_bytes = spec.image_bytes();
  for (const CameraSpec& camera : spec.cameras) {
    const int offset = spec.image_offset(camera.name);
    std::vector<uint8_t> frames;
    frames.reserve(static_cast<size_t>(steps) * camera.bytes());
    for (int64_t row = 0; row < steps; ++row) {
      const uint8_t* begin = &images[static_cast<size_t>(row) * image_bytes + offset];
      frames.insert(frames.end(), begin, begin + camera.bytes());
    }
    (*episode)["obs/" + CameraImageKey(camera)] =
        data::Array::From<uint8_t>({steps, camera.height, camera.width, 3}, frames);
  }
}

// The task's observation keys in layout order: training concatenates obs/<key> in this order.
std::vector<std::string> ObsKeyNames(const Task& task) {
  std::vector<std::string> names;
  for (const ArraySpec& key : task.obs_spec().keys) names.push_back(key.name);
  return names;
}

std::string CollectEnvArgs(const Task& task, const CollectOptions& options) {
  const RolloutOptions& r = options.rollout;
  nlohmann::json kwargs = {{"task", task.name()},
                           {"policy", options.policy_reference},
                           {"policy_seed", options.policy_seed},
                           {"base_seed", r.base_seed},
                           {"first_episode", r.first_episode},
                           {"num_episodes", r.num_episodes},
                           {"max_steps", r.max_steps > 0 ? r.max_steps : task.max_steps()},
                           {"success_only", options.success_only},
                           {"failures_only", options.failures_only},
                           {"robustness", RobustnessToJson(r.robustness)},
                           {"state_size", PhysicsStateSize(task.model())},
                           {"obs_keys", ObsKeyNames(task)},
                           {"cameras", CamerasJson(task.obs_spec())}};
  return nlohmann::json{{"env_name", task.name()}, {"type", "roboloop"}, {"env_kwargs", kwargs}}
      .dump();
}

absl::StatusOr<DatasetSummary> CollectDataset(const Task& task, Policy& policy,
                                              const CollectOptions& options) {
  data::DatasetWriter::Options writer_options;
  writer_options.path = options.output_path;
  writer_options.overwrite = options.overwrite;
  writer_options.storage = options.storage;
  writer_options.env_args_json = CollectEnvArgs(task, options);
  writer_options.lineage.operation = "collect";
  RolloutOptions rollout = options.rollout;
  rollout.record_trajectories = true;
  ROBOLOOP_ASSIGN_OR_RETURN(auto engine, RolloutEngine::Create(&task, rollout));
  ROBOLOOP_ASSIGN_OR_RETURN(auto writer, data::DatasetWriter::Create(writer_options));
  DatasetSink sink(task, options, writer.get());
  ROBOLOOP_RETURN_IF_ERROR(engine->Run(policy, sink));
  if (sink.summary().episodes_written == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "collect: none of the ", sink.summary().episodes_run, " episodes of ", task.name(),
        " qualified for ", options.output_path, options.success_only    ? " (only successes kept)"
                          : options.failures_only ? " (only failures kept)"
                                                  : ""));
  }
  ROBOLOOP_RETURN_IF_ERROR(writer->Close());
  DatasetSummary summary = sink.summary();
  summary.path = options.output_path;
  ROBOLOOP_ASSIGN_OR_RETURN(summary.sha256, Sha256File(options.output_path));
  return summary;
}

}  // namespace roboloop::sim
