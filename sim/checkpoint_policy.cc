#include "sim/checkpoint_policy.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/fs.h"
#include "common/status.h"
#include "train/torch_runtime.h"

namespace roboloop::sim {
namespace {

constexpr char kFullChunk[] = "full_chunk";
constexpr char kRecedingPrefix[] = "receding_horizon:";
constexpr char kEnsemblePrefix[] = "temporal_ensembling:";

// One episode's inputs and predictions.
struct EpisodeState {
  int32_t next_step = 0;                 // the step the next row of this episode must carry
  std::vector<float> history;            // history x obs_dim, oldest first
  // Chunks predicted for this episode, oldest first: (query step, chunk x action_dim).
  std::deque<std::pair<int32_t, std::vector<float>>> chunks;
};

std::string DescribeCamera(const CameraSpec& camera) {
  return absl::StrCat("camera '", camera.name, "' ", camera.width, "x", camera.height, " (width x height)");
}

// Bytes of one observation's frames of `cameras`.
int ImageBytes(const std::vector<CameraSpec>& cameras) {
  int bytes = 0;
  for (const CameraSpec& camera : cameras) bytes += camera.bytes();
  return bytes;
}

// The byte offset in the task's image row of each of `cameras`, each of which must be a task
// camera of the same size. InvalidArgument "<subject> does not fit the task: ..." otherwise.
absl::StatusOr<std::vector<int>> TaskImageOffsets(const std::vector<CameraSpec>& cameras, const std::string& subject,
                                                  const ObsSpec& obs_spec) {
  std::vector<int> offsets;
  for (const CameraSpec& camera : cameras) {
    const auto task = std::find_if(obs_spec.cameras.begin(), obs_spec.cameras.end(),
                                   [&](const CameraSpec& c) { return c.name == camera.name; });
    std::string problem;
    if (task == obs_spec.cameras.end()) {
      problem = "the task has no camera of that name";
    } else if (task->width != camera.width || task->height != camera.height) {
      problem = absl::StrCat("the task's is ", task->width, "x", task->height);
    }
    if (!problem.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(subject, " does not fit the task: it sees ",
                                                     DescribeCamera(camera), " but ",
                                                     problem, " (task observation ", DescribeObsSpec(obs_spec), ")"));
    }
    offsets.push_back(obs_spec.image_offset(camera.name));
  }
  return offsets;
}

// Executes a ChunkModel's chunks per episode. Not thread-safe (Policy's contract).
class ChunkedPolicy : public Policy {
 public:
  ChunkedPolicy(std::unique_ptr<ChunkModel> model, ChunkExecution execution, std::string name,
                ObsSpec obs_spec, ActionSpec action_spec, std::vector<int> camera_offsets)
      : model_(std::move(model)),
        execution_(execution),
        name_(std::move(name)),
        obs_spec_(std::move(obs_spec)),
        action_spec_(std::move(action_spec)),
        camera_offsets_(std::move(camera_offsets)),
        model_image_bytes_(ImageBytes(model_->cameras())) {}

  std::string name() const override { return name_; }
  const ObsSpec& obs_spec() const override { return obs_spec_; }
  const ActionSpec& action_spec() const override { return action_spec_; }

  absl::Status Act(const PolicyBatch& batch, float* actions) override {
    query_rows_.clear();
    for (int row = 0; row < batch.batch; ++row) {
      ROBOLOOP_ASSIGN_OR_RETURN(EpisodeState * state, Observe(batch, row));
      if (NeedsQuery(*state, batch.step[row])) query_rows_.push_back(row);
    }
    ROBOLOOP_RETURN_IF_ERROR(Query(batch));
    for (int row = 0; row < batch.batch; ++row) {
      EpisodeState& state = episodes_.at(batch.episode_index[row]);
      WriteAction(state, batch.step[row], actions + static_cast<size_t>(row) * model_->action_dim());
      state.next_step = batch.step[row] + 1;
    }
    return absl::OkStatus();
  }

  void EndEpisode(int64_t episode_index) override { episodes_.erase(episode_index); }

 private:
  // Steps between queries: H for full chunks, N for a receding horizon, 1 for ensembling.
  int QueryPeriod() const {
    switch (execution_.mode) {
      case ChunkExecution::Mode::kFullChunk:
        return model_->chunk();
      case ChunkExecution::Mode::kRecedingHorizon:
        return execution_.receding_steps;
      case ChunkExecution::Mode::kTemporalEnsemble:
        return 1;
    }
    return 1;
  }

  // Appends the row's observation to its episode's history (a new episode at step 0 fills
  // the whole history with it).
  absl::StatusOr<EpisodeState*> Observe(const PolicyBatch& batch, int row) {
    const int64_t episode = batch.episode_index[row];
    const int32_t step = batch.step[row];
    const int obs_dim = model_->obs_dim();
    const float* obs = batch.obs + static_cast<size_t>(row) * obs_dim;
    if (step == 0) {
      EpisodeState& state = episodes_[episode];
      state = EpisodeState();
      state.history.resize(static_cast<size_t>(model_->history()) * obs_dim);
      for (int h = 0; h < model_->history(); ++h) std::copy(obs, obs + obs_dim, &state.history[h * obs_dim]);
      return &state;
    }
    auto it = episodes_.find(episode);
    if (it == episodes_.end() || it->second.next_step != step) {
      return absl::FailedPreconditionError(absl::StrCat(
          "policy ", name_, ": episode ", episode, " arrived at step ", step, " but ",
          it == episodes_.end() ? std::string("its earlier steps were never seen")
                                : absl::StrCat("step ", it->second.next_step, " was expected")));
    }
    std::vector<float>& history = it->second.history;
    std::copy(history.begin() + obs_dim, history.end(), history.begin());
    std::copy(obs, obs + obs_dim, history.end() - obs_dim);
    return &it->second;
  }

  bool NeedsQuery(const EpisodeState& state, int32_t step) const {
    return state.chunks.empty() || step - state.chunks.back().first >= QueryPeriod();
  }

  // Runs the model once on every row that needs a new chunk and files the chunks.
  absl::Status Query(const PolicyBatch& batch) {
    if (query_rows_.empty()) return absl::OkStatus();
    const size_t rows = query_rows_.size();
    const size_t in_size = static_cast<size_t>(model_->history()) * model_->obs_dim();
    const size_t out_size = static_cast<size_t>(model_->chunk()) * model_->action_dim();
    query_obs_.resize(rows * in_size);
    query_history_length_.resize(rows);
    query_actions_.resize(rows * out_size);
    for (size_t q = 0; q < rows; ++q) {
      const int row = query_rows_[q];
      const EpisodeState& state = episodes_.at(batch.episode_index[row]);
      std::copy(state.history.begin(), state.history.end(), query_obs_.begin() + q * in_size);
      query_history_length_[q] = std::min(batch.step[row] + 1, model_->history());
    }
    ROBOLOOP_RETURN_IF_ERROR(GatherImages(batch));
    ROBOLOOP_RETURN_IF_ERROR(model_->Predict(query_obs_.data(), query_history_length_.data(),
                                             model_image_bytes_ > 0 ? query_images_.data() : nullptr,
                                             static_cast<int>(rows), query_actions_.data()));
    for (size_t q = 0; q < rows; ++q) {
      const int row = query_rows_[q];
      EpisodeState& state = episodes_.at(batch.episode_index[row]);
      const float* chunk = query_actions_.data() + q * out_size;
      state.chunks.emplace_back(batch.step[row], std::vector<float>(chunk, chunk + out_size));
      // Only chunks that still cover a future step are kept (ensembling keeps up to H).
      const int keep = execution_.mode == ChunkExecution::Mode::kTemporalEnsemble ? model_->chunk() : 1;
      while (static_cast<int>(state.chunks.size()) > keep) state.chunks.pop_front();
    }
    return absl::OkStatus();
  }

  // The query rows' current frames of the model's cameras, in its order, into query_images_.
  absl::Status GatherImages(const PolicyBatch& batch) {
    if (model_image_bytes_ == 0) return absl::OkStatus();
    if (batch.images == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("policy ", name_, " sees cameras, but the batch carries no images"));
    }
    const size_t task_bytes = static_cast<size_t>(obs_spec_.image_bytes());
    query_images_.resize(query_rows_.size() * model_image_bytes_);
    uint8_t* out = query_images_.data();
    for (const int row : query_rows_) {
      const uint8_t* frames = batch.images + static_cast<size_t>(row) * task_bytes;
      for (size_t k = 0; k < camera_offsets_.size(); ++k) {
        out = std::copy_n(frames + camera_offsets_[k], model_->cameras()[k].bytes(), out);
      }
    }
    return absl::OkStatus();
  }

  // The action for `step`: the newest chunk's entry, or (ensembling) the average of every
  // chunk covering the step with weights exp(-m * i), i = 0 for the oldest.
  void WriteAction(const EpisodeState& state, int32_t step, float* action) const {
    const int action_dim = model_->action_dim();
    if (execution_.mode != ChunkExecution::Mode::kTemporalEnsemble) {
      const auto& [query_step, chunk] = state.chunks.back();
      std::copy_n(&chunk[static_cast<size_t>(step - query_step) * action_dim], action_dim, action);
      return;
    }
    for (int d = 0; d < action_dim; ++d) {
      double weighted = 0, total_weight = 0;
      int age_rank = 0;
      for (const auto& [query_step, chunk] : state.chunks) {
        const int offset = step - query_step;
        if (offset >= model_->chunk()) continue;
        const double weight = std::exp(-execution_.ensemble_coefficient * age_rank++);
        weighted += weight * chunk[static_cast<size_t>(offset) * action_dim + d];
        total_weight += weight;
      }
      action[d] = static_cast<float>(weighted / total_weight);
    }
  }

  std::unique_ptr<ChunkModel> model_;
  ChunkExecution execution_;
  std::string name_;
  ObsSpec obs_spec_;
  ActionSpec action_spec_;
  std::map<int64_t, EpisodeState> episodes_;
  std::vector<int> query_rows_;
  std::vector<float> query_obs_;
  std::vector<int32_t> query_history_length_;
  std::vector<float> query_actions_;
  const std::vector<int> camera_offsets_;  // per model camera: its offset in the task's image row
  const int model_image_bytes_;            // bytes of one row's frames in the model's order
  std::vector<uint8_t> query_images_;
};

// A checkpoint's model behind the torch boundary.
class TorchChunkModel : public ChunkModel {
 public:
  TorchChunkModel(std::unique_ptr<train::TorchPolicy> policy, const CheckpointPolicySpec& spec,
                  bool batch_invariant)
      : policy_(std::move(policy)), spec_(spec), batch_invariant_(batch_invariant) {}

  int history() const override { return spec_.history; }
  int chunk() const override { return spec_.chunk; }
  int obs_dim() const override { return spec_.obs_dim; }
  int action_dim() const override { return spec_.action_dim; }
  const std::vector<CameraSpec>& cameras() const override { return spec_.cameras; }

  absl::Status Predict(const float* obs, const int32_t* history_length, const uint8_t* images, int rows,
                       float* actions) override {
    if (spec_.cameras.empty()) {
      return policy_->ActChunk(obs, history_length, rows, spec_.history, spec_.obs_dim, actions,
                               spec_.chunk, spec_.action_dim, batch_invariant_);
    }
    return policy_->ActChunkImages(obs, history_length, images, ImageBytes(spec_.cameras), rows, spec_.history,
                                   spec_.obs_dim, actions, spec_.chunk, spec_.action_dim, batch_invariant_);
  }

 private:
  std::unique_ptr<train::TorchPolicy> policy_;
  CheckpointPolicySpec spec_;
  bool batch_invariant_;
};

std::string DescribeKey(const std::string& name, const std::vector<int64_t>& shape) {
  return absl::StrCat("'", name, "' [", absl::StrJoin(shape, "x"), "]");
}

std::vector<int64_t> TaskShape(const ArraySpec& key) { return {key.shape.begin(), key.shape.end()}; }

absl::Status CheckObsKeys(const registry::ArraySpecs& keys, const std::string& checkpoint, const ObsSpec& obs_spec) {
  const std::string prefix = absl::StrCat("checkpoint ", checkpoint, " does not fit the task: ");
  for (size_t i = 0; i < std::max(keys.names.size(), obs_spec.keys.size()); ++i) {
    const std::string mine = i < keys.names.size() ? DescribeKey(keys.names[i], keys.shapes[i]) : "nothing";
    const std::string task = i < obs_spec.keys.size()
                                 ? DescribeKey(obs_spec.keys[i].name, TaskShape(obs_spec.keys[i]))
                                 : "nothing";
    if (mine != task) {
      return absl::InvalidArgumentError(absl::StrCat(prefix, "observation key ", i, " is ", mine,
                                                     " in the checkpoint but ", task, " in the task (",
                                                     DescribeObsSpec(obs_spec), ")"));
    }
  }
  return absl::OkStatus();
}

// The cameras of policy options `options` (absent = none); InvalidArgument naming `subject` and
// the entry that is not {name: string, width: integer, height: integer}.
absl::StatusOr<std::vector<CameraSpec>> OptionCameras(const nlohmann::json& options, const std::string& subject) {
  const nlohmann::json entries = options.value("cameras", nlohmann::json::array());
  if (!entries.is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(subject, ": policy option 'cameras' is ", entries.dump(),
                                                   ", expected an array"));
  }
  std::vector<CameraSpec> cameras;
  for (size_t i = 0; i < entries.size(); ++i) {
    const nlohmann::json& entry = entries[i];
    if (!entry.is_object() || !entry.value("name", nlohmann::json()).is_string() ||
        !entry.value("width", nlohmann::json()).is_number_integer() ||
        !entry.value("height", nlohmann::json()).is_number_integer()) {
      return absl::InvalidArgumentError(absl::StrCat(subject, ": policy option 'cameras' entry ", i, " is ",
                                                     entry.dump(), ", expected {name, width, height}"));
    }
    cameras.push_back({entry["name"].get<std::string>(), "", entry["width"].get<int>(), entry["height"].get<int>()});
  }
  return cameras;
}

// The spec of a policy of kind and options `policy` run on the task; `subject` ("checkpoint
// <ref>", "policy <path>") names it in errors.
absl::StatusOr<CheckpointPolicySpec> PolicySpecFor(const registry::PolicySection& policy,
                                                   const nlohmann::json& normalization, const std::string& subject,
                                                   const ObsSpec& obs_spec, const ActionSpec& action_spec) {
  absl::StatusOr<const registry::PolicyKind*> kind = registry::FindPolicyKind(policy.kind);
  if (!kind.ok()) return Annotate(kind.status(), subject);
  absl::StatusOr<nlohmann::json> options = registry::CompletePolicyOptions(**kind, policy.options);
  if (!options.ok()) return Annotate(options.status(), subject);
  CheckpointPolicySpec spec;
  spec.kind = policy.kind;
  spec.options = *options;
  spec.normalization = normalization;
  spec.blob_suffix = (*kind)->blob_suffix;
  spec.obs_dim = spec.options.value("obs_dim", obs_spec.size());
  spec.action_dim = spec.options.value("action_dim", action_spec.size());
  spec.history = spec.options.value("history", 1);
  spec.chunk = spec.options.value("chunk", 1);
  ROBOLOOP_ASSIGN_OR_RETURN(spec.cameras, OptionCameras(spec.options, subject));
  ROBOLOOP_RETURN_IF_ERROR(TaskImageOffsets(spec.cameras, subject, obs_spec).status());
  if (spec.obs_dim != obs_spec.size() || spec.action_dim != action_spec.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        subject, " does not fit the task: its options say obs_dim ", spec.obs_dim, " and action_dim ",
        spec.action_dim, ", the task has ", obs_spec.size(), " obs floats (", DescribeObsSpec(obs_spec), ") and ",
        action_spec.size(), " action dims"));
  }
  return spec;
}

std::vector<CameraSpec> ToCameraSpecs(const std::vector<registry::ManifestCamera>& cameras) {
  std::vector<CameraSpec> specs;
  for (const registry::ManifestCamera& c : cameras) {
    specs.push_back({c.name, c.camera, static_cast<int>(c.width), static_cast<int>(c.height)});
  }
  return specs;
}

// "a 84x84, b 4x4": names and sizes (width x height), in order.
std::string DescribeCameras(const std::vector<CameraSpec>& cameras) {
  std::vector<std::string> parts;
  for (const CameraSpec& c : cameras) parts.push_back(absl::StrCat(c.name, " ", c.width, "x", c.height));
  return absl::StrJoin(parts, ", ");
}

// CheckManifestFitsTask on a parsed manifest.
absl::StatusOr<CheckpointPolicySpec> CheckManifest(const registry::CheckpointManifest& manifest,
                                                   const std::string& checkpoint, const ObsSpec& obs_spec,
                                                   const ActionSpec& action_spec) {
  ROBOLOOP_RETURN_IF_ERROR(CheckObsKeys(manifest.obs_spec, checkpoint, obs_spec));
  if (manifest.action_spec.Floats() != action_spec.size()) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint ", checkpoint, " does not fit the task: it writes ",
                                                   manifest.action_spec.Floats(), " action dims, the task takes ",
                                                   action_spec.size()));
  }
  const std::string subject = absl::StrCat("checkpoint ", checkpoint);
  const std::vector<CameraSpec> cameras = ToCameraSpecs(manifest.obs_spec.cameras);
  ROBOLOOP_RETURN_IF_ERROR(TaskImageOffsets(cameras, subject, obs_spec).status());
  ROBOLOOP_ASSIGN_OR_RETURN(CheckpointPolicySpec spec,
                            PolicySpecFor(manifest.policy, manifest.normalization, subject, obs_spec, action_spec));
  if (DescribeCameras(spec.cameras) != DescribeCameras(cameras)) {
    return absl::InvalidArgumentError(absl::StrCat(subject, ": manifest obs_spec.cameras [", DescribeCameras(cameras),
                                                   "] disagree with policy.options.cameras [",
                                                   DescribeCameras(spec.cameras), "]"));
  }
  const registry::BlobDigest* blob = manifest.Blob(registry::kPolicyBlobRole);
  if (blob == nullptr) return absl::InvalidArgumentError(absl::StrCat("checkpoint ", checkpoint, " has no policy blob"));
  spec.policy_sha256 = blob->sha256;
  return spec;
}

// The shortest decimal text that reads back as exactly `value`.
std::string ShortestDecimal(double value) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

// Runs `model` once on a zero observation history of the task's size.
absl::Status ProbeFitsTask(ChunkModel& model, const std::string& name, const ObsSpec& obs_spec,
                           const ActionSpec& action_spec) {
  std::vector<float> obs(static_cast<size_t>(model.history()) * model.obs_dim(), 0.0f);
  std::vector<float> actions(static_cast<size_t>(model.chunk()) * model.action_dim(), 0.0f);
  const int image_bytes = ImageBytes(model.cameras());
  const std::vector<uint8_t> images(static_cast<size_t>(image_bytes), 0);
  const int32_t history_length = 1;
  const absl::Status status =
      model.Predict(obs.data(), &history_length, image_bytes > 0 ? images.data() : nullptr, 1, actions.data());
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("policy ", name, " does not fit the task (observation ",
                                                   DescribeObsSpec(obs_spec), " = ", obs_spec.size(), " floats, ",
                                                   action_spec.size(), " action dims): ", status.message()));
  }
  const auto non_finite = std::find_if(actions.begin(), actions.end(), [](float a) { return !std::isfinite(a); });
  if (non_finite == actions.end()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "policy ", name, " predicts a non-finite action (action[", non_finite - actions.begin(), "] = ",
      ShortestDecimal(*non_finite), ") for a zero observation of the task; a policy must give finite actions"));
}

// Loads the policy file `path` of `spec` through the torch boundary as policy `name`.
absl::StatusOr<std::unique_ptr<Policy>> LoadSpecPolicy(const std::string& path, const CheckpointPolicySpec& spec,
                                                       const PolicyRunOptions& options, const std::string& name,
                                                       const ObsSpec& obs_spec, const ActionSpec& action_spec) {
  nlohmann::json model_options = spec.options;
  if (!spec.normalization.empty()) model_options["normalization"] = spec.normalization;
  ROBOLOOP_ASSIGN_OR_RETURN(const train::TorchRuntime* runtime, train::TorchRuntime::Load());
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<train::TorchPolicy> model,
                            runtime->LoadPolicy(path, spec.kind, model_options.dump()));
  auto chunk_model = std::make_unique<TorchChunkModel>(std::move(model), spec, options.batch_invariant);
  ROBOLOOP_RETURN_IF_ERROR(ProbeFitsTask(*chunk_model, name, obs_spec, action_spec));
  return MakeChunkedPolicy(std::move(chunk_model), options.execution, name, obs_spec, action_spec);
}

// The first BLAS library in this process's memory map ("" when none is mapped).
std::string MappedBlasLibrary() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const size_t path = line.find('/');
    if (path == std::string::npos) continue;
    const std::string file = line.substr(path);
    const std::string base = file.substr(file.find_last_of('/') + 1);
    if (base.rfind("libblas", 0) == 0 || base.rfind("libopenblas", 0) == 0 || base.rfind("libmkl_rt", 0) == 0) {
      return file;
    }
  }
  return "";
}

}  // namespace

std::map<std::string, std::string> InferenceLibraries() {
  absl::StatusOr<const train::TorchRuntime*> runtime = train::TorchRuntime::Load();
  if (!runtime.ok()) return {{"libtorch", absl::StrCat("unavailable: ", runtime.status().message())}};
  const nlohmann::json info = nlohmann::json::parse((*runtime)->DescribeRuntime(), nullptr, false);
  std::map<std::string, std::string> libraries = {
      {"libtorch", info.is_object() ? info.value("libtorch_version", std::string("unknown")) : "unknown"}};
  const std::string blas = MappedBlasLibrary();
  if (!blas.empty()) libraries["blas"] = blas;
  return libraries;
}

absl::StatusOr<ChunkExecution> ParseChunkExecution(const std::string& text) {
  ChunkExecution execution;
  if (text == kFullChunk) return execution;
  const std::string usage = absl::StrCat(
      "chunk execution '", text, "' must be full_chunk, receding_horizon:N (N >= 1) or temporal_ensembling:m (m >= 0)");
  if (text.rfind(kRecedingPrefix, 0) == 0) {
    execution.mode = ChunkExecution::Mode::kRecedingHorizon;
    if (!absl::SimpleAtoi(text.substr(std::strlen(kRecedingPrefix)), &execution.receding_steps) ||
        execution.receding_steps < 1) {
      return absl::InvalidArgumentError(usage);
    }
    return execution;
  }
  if (text.rfind(kEnsemblePrefix, 0) == 0) {
    execution.mode = ChunkExecution::Mode::kTemporalEnsemble;
    if (!absl::SimpleAtod(text.substr(std::strlen(kEnsemblePrefix)), &execution.ensemble_coefficient) ||
        !(execution.ensemble_coefficient >= 0) || !std::isfinite(execution.ensemble_coefficient)) {
      return absl::InvalidArgumentError(usage);
    }
    return execution;
  }
  return absl::InvalidArgumentError(usage);
}

std::string ChunkExecutionName(const ChunkExecution& execution) {
  switch (execution.mode) {
    case ChunkExecution::Mode::kFullChunk:
      return kFullChunk;
    case ChunkExecution::Mode::kRecedingHorizon:
      return absl::StrCat(kRecedingPrefix, execution.receding_steps);
    case ChunkExecution::Mode::kTemporalEnsemble:
      return absl::StrCat(kEnsemblePrefix, ShortestDecimal(execution.ensemble_coefficient));
  }
  return kFullChunk;
}

absl::StatusOr<CheckpointPolicySpec> CheckManifestFitsTask(const nlohmann::json& manifest,
                                                           const std::string& checkpoint,
                                                           const ObsSpec& obs_spec,
                                                           const ActionSpec& action_spec) {
  absl::StatusOr<registry::CheckpointManifest> parsed = registry::CheckpointManifest::FromJson(manifest);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint ", checkpoint, ": malformed manifest: ",
                                                   parsed.status().message()));
  }
  return CheckManifest(*parsed, checkpoint, obs_spec, action_spec);
}

absl::StatusOr<std::unique_ptr<Policy>> MakeChunkedPolicy(std::unique_ptr<ChunkModel> model,
                                                          const ChunkExecution& execution,
                                                          const std::string& name,
                                                          const ObsSpec& obs_spec,
                                                          const ActionSpec& action_spec) {
  if (model->obs_dim() != obs_spec.size() || model->action_dim() != action_spec.size() ||
      model->history() < 1 || model->chunk() < 1) {
    return absl::InvalidArgumentError(absl::StrCat("policy ", name, ": model dims do not fit the specs"));
  }
  if (execution.mode == ChunkExecution::Mode::kRecedingHorizon &&
      (execution.receding_steps < 1 || execution.receding_steps > model->chunk())) {
    return absl::InvalidArgumentError(absl::StrCat("policy ", name, ": ", ChunkExecutionName(execution),
                                                   " needs 1 <= N <= the chunk horizon ", model->chunk()));
  }
  if (execution.mode == ChunkExecution::Mode::kTemporalEnsemble && !(execution.ensemble_coefficient >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat("policy ", name, ": the ensembling coefficient must be >= 0"));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<int> offsets,
                            TaskImageOffsets(model->cameras(), absl::StrCat("policy ", name), obs_spec));
  return std::unique_ptr<Policy>(
      new ChunkedPolicy(std::move(model), execution, name, obs_spec, action_spec, std::move(offsets)));
}

absl::StatusOr<std::unique_ptr<Policy>> LoadCheckpointPolicy(registry::RegistryClient& registry,
                                                             const std::string& ref,
                                                             const CheckpointPolicyOptions& options,
                                                             const ObsSpec& obs_spec,
                                                             const ActionSpec& action_spec) {
  absl::StatusOr<v1::Checkpoint> checkpoint = registry.GetCheckpoint(ref);
  if (!checkpoint.ok()) return Annotate(checkpoint.status(), absl::StrCat("checkpoint ", ref));
  const nlohmann::json manifest = nlohmann::json::parse(checkpoint->manifest_json(), nullptr, false);
  const std::string label = absl::StrCat(ref, " (", checkpoint->id(), ")");
  ROBOLOOP_ASSIGN_OR_RETURN(CheckpointPolicySpec spec, CheckManifestFitsTask(manifest, label, obs_spec, action_spec));
  if (options.execution.mode == ChunkExecution::Mode::kRecedingHorizon &&
      options.execution.receding_steps > spec.chunk) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint ", label, " predicts chunks of ", spec.chunk,
                                                   " actions; ", ChunkExecutionName(options.execution),
                                                   " needs N <= ", spec.chunk));
  }
  absl::StatusOr<std::string> path = registry.CachedCopy(spec.policy_sha256, options.cache_dir, spec.blob_suffix);
  if (!path.ok()) return Annotate(path.status(), absl::StrCat("checkpoint ", label, " policy blob"));
  absl::StatusOr<std::unique_ptr<Policy>> policy =
      LoadSpecPolicy(*path, spec, {options.execution, options.batch_invariant}, checkpoint->id(), obs_spec, action_spec);
  if (!policy.ok()) return Annotate(policy.status(), absl::StrCat("checkpoint ", label));
  return policy;
}

absl::StatusOr<std::unique_ptr<Policy>> LoadPolicyFile(const PolicyFile& file, const PolicyRunOptions& options,
                                                       const ObsSpec& obs_spec, const ActionSpec& action_spec) {
  ROBOLOOP_ASSIGN_OR_RETURN(CheckpointPolicySpec spec, PolicySpecFor(file.policy, file.normalization,
                                                                     absl::StrCat("policy ", file.path),
                                                                     obs_spec, action_spec));
  return LoadSpecPolicy(file.path, spec, options, file.path, obs_spec, action_spec);
}

}  // namespace roboloop::sim
