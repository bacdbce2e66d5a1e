#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/sha256.h"
#include "common/status.h"
#include "data/dataset_reader.h"
#include "data/dataset_writer.h"
#include "nlohmann/json.hpp"
#include "sim/camera_renderer.h"
#include "sim/collect.h"
#include "sim/physics_state.h"

namespace roboloop::sim {
namespace {

// Reuses one mjData (and, for a task with cameras, one camera renderer) to turn recorded
// states into noise-free observations.
class StateObserver {
 public:
  static absl::StatusOr<StateObserver> Create(const Task& task) {
    ROBOLOOP_ASSIGN_OR_RETURN(DataPtr data, MakeData(task.model()));
    std::unique_ptr<CameraRenderer> renderer;
    if (!task.obs_spec().cameras.empty()) {
      ROBOLOOP_ASSIGN_OR_RETURN(
          renderer, CameraRenderer::Create(task.model(), task.obs_spec().cameras, CameraRenderer::Options()));
    }
    return StateObserver(task, std::move(data), std::move(renderer));
  }

  // Observation rows, privileged rows (task.privileged_spec()) and image rows (none without
  // cameras) for `steps` state rows of `states` (PhysicsStateSize doubles each).
  absl::Status Observe(const double* states, int64_t steps, std::vector<float>* obs, std::vector<float>* privileged,
                       std::vector<uint8_t>* images) {
    const int state_size = PhysicsStateSize(task_.model());
    const int obs_size = task_.obs_spec().size();
    const int privileged_size = task_.privileged_spec().size();
    const int image_bytes = task_.obs_spec().image_bytes();
    obs->resize(static_cast<size_t>(steps) * obs_size);
    privileged->resize(static_cast<size_t>(steps) * privileged_size);
    images->resize(static_cast<size_t>(steps) * image_bytes);
    absl::Status produced;
    ROBOLOOP_RETURN_IF_ERROR(GuardMujoco("restoring a recorded state", [&] {
      for (int64_t row = 0; row < steps && produced.ok(); ++row) {
        RestorePhysicsState(task_.model(), states + row * state_size, data_.get());
        produced = task_.ObserveOrError(task_.model(), data_.get(), &(*obs)[static_cast<size_t>(row) * obs_size]);
        if (!produced.ok()) break;
        if (privileged_size > 0) {
          task_.ObservePrivileged(task_.model(), data_.get(),
                                  &(*privileged)[static_cast<size_t>(row) * privileged_size]);
        }
        if (renderer_ != nullptr) {
          produced = renderer_->Render(task_.model(), data_.get(), &(*images)[static_cast<size_t>(row) * image_bytes]);
        }
      }
    }));
    return produced;
  }

 private:
  StateObserver(const Task& task, DataPtr data, std::unique_ptr<CameraRenderer> renderer)
      : task_(task), data_(std::move(data)), renderer_(std::move(renderer)) {}
  const Task& task_;
  DataPtr data_;
  std::unique_ptr<CameraRenderer> renderer_;
};

// The states of `episode` after checking their dtype and width against `task`.
absl::StatusOr<const data::Array*> RecordedStates(const Task& task, const data::Episode& episode) {
  auto it = episode.find("states");
  if (it == episode.end()) {
    return absl::InvalidArgumentError("has no 'states' feature: only datasets with full physics "
                                      "states can be relabelled");
  }
  const data::Array& states = it->second;
  const int expected = PhysicsStateSize(task.model());
  if (states.dtype != data::DType::kFloat64 || states.shape.size() != 2 || states.shape[1] != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "states are ", data::DTypeName(states.dtype), " ", data::ShapeToString(states.shape),
        "; task ", task.name(), " needs float64 [T, ", expected, "]"));
  }
  return &states;
}

// Replaces the actions of demo `demo_index` with the expert's for its recorded states.
absl::Status RelabelEpisode(const Task& task, Policy& expert, int64_t demo_index,
                            StateObserver& observer, data::Episode* episode) {
  ROBOLOOP_ASSIGN_OR_RETURN(const data::Array* states, RecordedStates(task, *episode));
  const int64_t steps = states->shape[0];
  std::vector<float> obs;
  std::vector<float> privileged;
  std::vector<uint8_t> images;
  ROBOLOOP_RETURN_IF_ERROR(
      observer.Observe(states->Values<double>().data(), steps, &obs, &privileged, &images));
  std::vector<int64_t> episode_index(steps, demo_index);
  std::vector<int32_t> step(steps);
  for (int64_t t = 0; t < steps; ++t) step[t] = static_cast<int32_t>(t);
  const int action_size = task.action_spec().size();
  std::vector<float> actions(static_cast<size_t>(steps) * action_size);
  PolicyBatch batch{obs.data(), episode_index.data(), step.data(), static_cast<int>(steps)};
  if (!images.empty()) batch.images = images.data();
  if (!privileged.empty()) batch.privileged = privileged.data();
  ROBOLOOP_RETURN_IF_ERROR(Annotate(expert.Act(batch, actions.data()), expert.name()));
  (*episode)["actions"] = data::Array::From<float>({steps, action_size}, actions);
  AddCameraFrames(task.obs_spec(), images, steps, episode);
  return absl::OkStatus();
}

absl::StatusOr<std::string> RelabelledEnvArgs(const std::string& env_args, const Policy& expert) {
  nlohmann::json json = nlohmann::json::parse(env_args, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return absl::InvalidArgumentError("env_args is not a JSON object");
  json["relabelled_by"] = expert.name();
  return json.dump();
}

absl::StatusOr<std::unique_ptr<data::DatasetReader>> OpenDataset(const std::string& path,
                                                                 bool scan_values) {
  data::DatasetReader::Options options;
  options.path = path;
  options.validation.scan_values = scan_values;
  return data::DatasetReader::Open(options);
}

}  // namespace

absl::StatusOr<std::string> DatasetTaskName(const std::string& path) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto reader, OpenDataset(path, /*scan_values=*/false));
  nlohmann::json env_args =
      nlohmann::json::parse(reader->layout().env_args_json, nullptr, /*allow_exceptions=*/false);
  if (!env_args.is_object() || !env_args.contains("env_name") || !env_args["env_name"].is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": env_args names no task (no string \"env_name\"); give the task explicitly"));
  }
  return env_args["env_name"].get<std::string>();
}

absl::StatusOr<DatasetSummary> RelabelDataset(const Task& task, Policy& expert,
                                              const RelabelOptions& options) {
  const std::string& input = options.input_path;
  ROBOLOOP_RETURN_IF_ERROR(CheckObsSpecMatches(task.obs_spec(), expert.obs_spec(), expert.name()));
  ROBOLOOP_RETURN_IF_ERROR(CheckActionSpecMatches(task.action_spec(), expert.action_spec(), expert.name()));
  ROBOLOOP_ASSIGN_OR_RETURN(auto reader, OpenDataset(input, /*scan_values=*/true));
  const data::DatasetLayout& layout = reader->layout();
  data::DatasetWriter::Options writer_options;
  writer_options.path = options.output_path;
  writer_options.overwrite = options.overwrite;
  writer_options.storage = options.storage;
  absl::StatusOr<std::string> env_args = RelabelledEnvArgs(layout.env_args_json, expert);
  if (!env_args.ok()) return Annotate(env_args.status(), input);
  writer_options.env_args_json = *std::move(env_args);
  writer_options.lineage.operation = "relabel";
  ROBOLOOP_ASSIGN_OR_RETURN(std::string parent_sha, Sha256File(input));
  writer_options.lineage.parents.push_back({"dataset", input, parent_sha});
  ROBOLOOP_ASSIGN_OR_RETURN(StateObserver observer, StateObserver::Create(task));
  ROBOLOOP_ASSIGN_OR_RETURN(auto writer, data::DatasetWriter::Create(writer_options));
  DatasetSummary summary;
  std::map<std::string, std::string> renamed;
  for (const data::DemoLayout& demo : layout.demos) {
    ROBOLOOP_ASSIGN_OR_RETURN(data::Episode episode, reader->ReadEpisode(demo.name));
    ROBOLOOP_RETURN_IF_ERROR(Annotate(RelabelEpisode(task, expert, demo.index, observer, &episode),
                                      absl::StrCat(input, ": ", demo.name)));
    ROBOLOOP_ASSIGN_OR_RETURN(renamed[demo.name], writer->WriteEpisode(episode));
    ++summary.episodes_run;
    ++summary.episodes_written;
    summary.total_steps += demo.num_samples;
  }
  for (const auto& [split, demos] : layout.masks) {
    std::vector<std::string> names;
    for (const std::string& demo : demos) names.push_back(renamed.at(demo));
    ROBOLOOP_RETURN_IF_ERROR(writer->SetMask(split, names));
  }
  ROBOLOOP_RETURN_IF_ERROR(writer->Close());
  summary.path = options.output_path;
  ROBOLOOP_ASSIGN_OR_RETURN(summary.sha256, Sha256File(options.output_path));
  return summary;
}

}  // namespace roboloop::sim
