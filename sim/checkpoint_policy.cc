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

// Executes a ChunkModel's chunks per episode. Not thread-safe (Policy's contract).
class ChunkedPolicy : public Policy {
 public:
  ChunkedPolicy(std::unique_ptr<ChunkModel> model, ChunkExecution execution, std::string name,
                ObsSpec obs_spec, ActionSpec action_spec)
      : model_(std::move(model)),
        execution_(execution),
        name_(std::move(name)),
        obs_spec_(std::move(obs_spec)),
        action_spec_(std::move(action_spec)) {}

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
    ROBOLOOP_RETURN_IF_ERROR(model_->Predict(query_obs_.data(), query_history_length_.data(),
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

  absl::Status Predict(const float* obs, const int32_t* history_length, int rows,
                       float* actions) override {
    return policy_->ActChunk(obs, history_length, rows, spec_.history, spec_.obs_dim, actions,
                             spec_.chunk, spec_.action_dim, batch_invariant_);
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

// The manifest's obs_spec or action_spec as (name, shape) pairs.
absl::StatusOr<std::vector<std::pair<std::string, std::vector<int64_t>>>> ReadSpec(
    const nlohmann::json& manifest, const char* field, const std::string& checkpoint) {
  const nlohmann::json* spec = manifest.contains(field) ? &manifest[field] : nullptr;
  if (spec == nullptr || !spec->is_object() || !spec->value("names", nlohmann::json()).is_array() ||
      !spec->value("shapes", nlohmann::json()).is_array() ||
      (*spec)["names"].size() != (*spec)["shapes"].size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint ", checkpoint, ": manifest ", field, " must hold names and shapes of equal length"));
  }
  std::vector<std::pair<std::string, std::vector<int64_t>>> keys;
  for (size_t i = 0; i < (*spec)["names"].size(); ++i) {
    keys.emplace_back((*spec)["names"][i].get<std::string>(),
                      (*spec)["shapes"][i].get<std::vector<int64_t>>());
  }
  return keys;
}

absl::Status CheckObsKeys(const std::vector<std::pair<std::string, std::vector<int64_t>>>& keys,
                          const std::string& checkpoint, const ObsSpec& obs_spec) {
  const std::string prefix = absl::StrCat("checkpoint ", checkpoint, " does not fit the task: ");
  for (size_t i = 0; i < std::max(keys.size(), obs_spec.keys.size()); ++i) {
    const std::string mine = i < keys.size() ? DescribeKey(keys[i].first, keys[i].second) : "nothing";
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

int64_t Floats(const std::vector<std::pair<std::string, std::vector<int64_t>>>& keys) {
  int64_t total = 0;
  for (const auto& [name, shape] : keys) {
    int64_t size = 1;
    for (int64_t d : shape) size *= d;
    total += size;
  }
  return total;
}

int IntOption(const nlohmann::json& options, const char* key, int fallback) {
  const nlohmann::json value = options.value(key, nlohmann::json(fallback));
  return value.is_number_integer() ? value.get<int>() : -1;
}

// CheckManifestFitsTask without the catch of JSON type errors.
absl::StatusOr<CheckpointPolicySpec> CheckManifest(const nlohmann::json& manifest, const std::string& checkpoint,
                                                   const ObsSpec& obs_spec, const ActionSpec& action_spec) {
  if (!manifest.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint ", checkpoint, ": manifest is not a JSON object"));
  }
  CheckpointPolicySpec spec;
  spec.kind = manifest.value("/policy/kind"_json_pointer, std::string());
  if (spec.kind != "mlp" && spec.kind != "transformer") {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint ", checkpoint, " holds a '", spec.kind,
                                                   "' policy; rollouts serve mlp and transformer checkpoints"));
  }
  spec.options = manifest.value("/policy/options"_json_pointer, nlohmann::json::object());
  spec.normalization = manifest.value("normalization", nlohmann::json::object());
  ROBOLOOP_ASSIGN_OR_RETURN(auto obs_keys, ReadSpec(manifest, "obs_spec", checkpoint));
  ROBOLOOP_RETURN_IF_ERROR(CheckObsKeys(obs_keys, checkpoint, obs_spec));
  ROBOLOOP_ASSIGN_OR_RETURN(auto action_keys, ReadSpec(manifest, "action_spec", checkpoint));
  if (Floats(action_keys) != action_spec.size()) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint ", checkpoint, " does not fit the task: it writes ",
                                                   Floats(action_keys), " action dims, the task takes ",
                                                   action_spec.size()));
  }
  spec.obs_dim = IntOption(spec.options, "obs_dim", 0);
  spec.action_dim = IntOption(spec.options, "action_dim", 0);
  spec.history = IntOption(spec.options, "history", 1);
  spec.chunk = IntOption(spec.options, "chunk", 1);
  if (spec.obs_dim != obs_spec.size() || spec.action_dim != action_spec.size() || spec.history < 1 ||
      spec.chunk < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint ", checkpoint, ": policy.options (obs_dim ", spec.obs_dim, ", action_dim ", spec.action_dim,
        ", history ", spec.history, ", chunk ", spec.chunk, ") disagree with its specs (", obs_spec.size(),
        " obs floats, ", action_spec.size(), " action dims) or are not positive"));
  }
  spec.policy_sha256 = manifest.value("/blobs/policy/sha256"_json_pointer, std::string());
  if (spec.policy_sha256.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint ", checkpoint, " has no policy blob"));
  }
  return spec;
}


// The shortest decimal text that reads back as exactly `value`.
std::string ShortestDecimal(double value) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
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
  try {
    return CheckManifest(manifest, checkpoint, obs_spec, action_spec);
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint ", checkpoint, ": malformed manifest: ", e.what()));
  }
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
  return std::unique_ptr<Policy>(new ChunkedPolicy(std::move(model), execution, name, obs_spec, action_spec));
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
  absl::StatusOr<std::string> path = registry.CachedCopy(spec.policy_sha256, options.cache_dir, ".safetensors");
  if (!path.ok()) return Annotate(path.status(), absl::StrCat("checkpoint ", label, " policy blob"));
  nlohmann::json model_options = spec.options;
  model_options["normalization"] = spec.normalization;
  ROBOLOOP_ASSIGN_OR_RETURN(const train::TorchRuntime* runtime, train::TorchRuntime::Load());
  absl::StatusOr<std::unique_ptr<train::TorchPolicy>> model =
      runtime->LoadPolicy(*path, spec.kind, model_options.dump());
  if (!model.ok()) return Annotate(model.status(), absl::StrCat("checkpoint ", label));
  auto chunk_model = std::make_unique<TorchChunkModel>(std::move(model).value(), spec, options.batch_invariant);
  return MakeChunkedPolicy(std::move(chunk_model), options.execution, checkpoint->id(), obs_spec, action_spec);
}

}  // namespace roboloop::sim
