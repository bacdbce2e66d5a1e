// The loop of one training rank.
#include "train/train_run.h"

#include <google/protobuf/util/json_util.h>

#include <chrono>
#include <cstdlib>
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "spdlog/spdlog.h"
#include "common/fs.h"
#include "common/ids.h"
#include "common/status.h"
#include "common/store_layout.h"
#include "data/episode_cache.h"
#include "data/episode_store.h"
#include "train/checkpoint_io.h"
#include "train/cuda_graph_rule.h"
#include "train/dataset_features.h"
#include "train/dataset_set.h"
#include "train/loader.h"
#include "train/lookahead_batches.h"
#include "train/normalization.h"
#include "train/policy_spec_options.h"
#include "train/run_log.h"
#include "train/sample_trace.h"
#include "train/torch_runtime.h"
#include "train/validation_loss.h"

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

// The checkpoint's architecture, checked against the dataset's dims and cameras.
absl::StatusOr<nlohmann::json> PolicyOptionsFromCheckpoint(const FetchedCheckpoint& checkpoint,
                                                           const std::string& ref,
                                                           const DatasetFeatures& features) {
  const absl::StatusOr<nlohmann::json> completed = checkpoint.manifest.CompleteOptions();
  if (!completed.ok()) return Annotate(completed.status(), absl::StrCat("checkpoint ", ref));
  const nlohmann::json& options = *completed;
  const int64_t obs_dim = options.value("obs_dim", int64_t{0});
  const int64_t action_dim = options.value("action_dim", int64_t{0});
  if (obs_dim != features.obs_dim || action_dim != features.action_dim) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint ", ref, " reads obs_dim ", obs_dim, " and writes action_dim ", action_dim,
        ", but the dataset has obs_dim ", features.obs_dim, " (", absl::StrJoin(features.obs, ", "),
        ") and action_dim ", features.action_dim));
  }
  ROBOLOOP_RETURN_IF_ERROR(CheckOptionCameras(options, features, ref));
  return options;
}

absl::StatusOr<nlohmann::json> TrainerConfigJson(const v1::TrainConfig& config, const nlohmann::json& policy,
                                                 const RankInfo& rank) {
  const v1::OptimizerSpec& o = config.optimizer();
  ROBOLOOP_ASSIGN_OR_RETURN(const std::optional<bool> cuda_graph, ParseCudaGraphOption(config.cuda_graph()));
  nlohmann::json json = {{"policy", policy},
          {"optimizer",
           {{"lr", o.lr()}, {"weight_decay", o.weight_decay()}, {"warmup_steps", o.warmup_steps()},
            {"total_steps", config.steps()}, {"min_lr_ratio", o.min_lr_ratio()},
            {"clip_norm", o.clip_norm()}, {"ema_decay", o.ema_decay()}, {"bf16", o.bf16()}}},
          {"precision", config.precision()},
          {"fp8_scaling", config.fp8_scaling()},
          {"packed", !config.no_packing()},
          {"token_budget", config.token_budget()},
          {"seed", config.seed()},
          {"threads", config.threads()},
          {"device", config.device()},
          {"distributed",
           {{"rank", rank.rank}, {"world_size", rank.world_size}, {"local_rank", rank.local_rank},
            {"master_addr", rank.master_addr},
            {"master_port", rank.master_port}, {"timeout_seconds", config.rendezvous_timeout_s()}}}};
  if (cuda_graph.has_value()) json["cuda_graph"] = *cuda_graph;
  return json;
}

// Rank 0's outputs: logs and checkpoint registration.
class RunRecorder {
 public:
  static absl::StatusOr<std::unique_ptr<RunRecorder>> Create(const TrainRunOptions& options,
                                                             const std::string& run_id) {
    auto recorder = std::unique_ptr<RunRecorder>(new RunRecorder(options, run_id));
    const std::string dir = StoreLayout(options.root).TrainingRunDir(run_id);
    ROBOLOOP_RETURN_IF_ERROR(MakeDirs(JoinPath(dir, "checkpoints")));
    ROBOLOOP_ASSIGN_OR_RETURN(recorder->jsonl_, JsonlLog::Create(JoinPath(dir, "train.jsonl")));
    ROBOLOOP_ASSIGN_OR_RETURN(recorder->tensorboard_, TensorBoardWriter::Create(JoinPath(dir, "tensorboard")));
    recorder->dir_ = dir;
    return recorder;
  }

  const std::string& dir() const { return dir_; }

  absl::Status Emit(v1::TrainEvent event) {
    event.set_run_id(run_id_);
    event.set_wall_time(static_cast<double>(NowUnixMicros()) / 1e6);
    std::string json;
    google::protobuf::util::JsonPrintOptions print;
    print.preserve_proto_field_names = true;
    if (!google::protobuf::util::MessageToJsonString(event, &json, print).ok()) {
      return absl::InternalError("cannot print a training event as JSON");
    }
    ROBOLOOP_RETURN_IF_ERROR(jsonl_->Append(nlohmann::json::parse(json)));
    if (event.has_step()) {
      const v1::TrainEvent::Step& s = event.step();
      for (const auto& [tag, value] : {std::pair<const char*, double>{"train/loss", s.loss()},
                                       {"train/lr", s.lr()}, {"train/grad_norm", s.grad_norm()},
                                       {"train/samples_per_s", s.samples_per_s()},
                                       {"train/data_stall_pct", s.data_stall_pct()}}) {
        ROBOLOOP_RETURN_IF_ERROR(tensorboard_->AddScalar(tag, s.step(), event.wall_time(),
                                                         static_cast<float>(value)));
      }
    }
    if (event.has_validation()) {
      ROBOLOOP_RETURN_IF_ERROR(tensorboard_->AddScalar("valid/loss", event.validation().step(), event.wall_time(),
                                                       static_cast<float>(event.validation().loss())));
    }
    if (!event.has_step()) ROBOLOOP_RETURN_IF_ERROR(tensorboard_->Flush());
    if (options_.on_event) options_.on_event(event);
    return absl::OkStatus();
  }

 private:
  RunRecorder(const TrainRunOptions& options, std::string run_id)
      : options_(options), run_id_(std::move(run_id)) {}

  const TrainRunOptions& options_;
  std::string run_id_;
  std::string dir_;
  std::unique_ptr<JsonlLog> jsonl_;
  std::unique_ptr<TensorBoardWriter> tensorboard_;
};

// Everything prepared before the first step.
struct Prepared {
  std::string run_id;
  DatasetFeatures features;
  ResolvedDatasetSet dataset;
  nlohmann::json policy_options;
  Normalization normalization;
  std::optional<FetchedCheckpoint> resume;
  std::optional<FetchedCheckpoint> init;
  std::string parent_id;
};

absl::StatusOr<Prepared> Prepare(const TrainRunOptions& options) {
  const v1::TrainConfig& config = options.config;
  Prepared p;
  const std::string cache = JoinPath(options.root, "cache");
  std::vector<std::string> refs(config.datasets().begin(), config.datasets().end());
  if (!config.dataset().empty()) refs.insert(refs.begin(), config.dataset());
  ROBOLOOP_ASSIGN_OR_RETURN(p.dataset, ResolveDatasetSet(*options.registry, refs, cache,
                                                       /*register_files=*/options.rank.rank == 0));
  ROBOLOOP_ASSIGN_OR_RETURN(p.features, ReadSetFeatures(p.dataset.paths(), config));
  if (!config.resume().empty() && !config.init_from().empty()) {
    return absl::InvalidArgumentError("--resume and --init-from exclude each other");
  }
  const std::string& ref = config.resume().empty() ? config.init_from() : config.resume();
  if (!ref.empty()) {
    ROBOLOOP_ASSIGN_OR_RETURN(FetchedCheckpoint checkpoint, FetchCheckpoint(*options.registry, ref, cache));
    ROBOLOOP_ASSIGN_OR_RETURN(p.policy_options, PolicyOptionsFromCheckpoint(checkpoint, ref, p.features));
    ROBOLOOP_ASSIGN_OR_RETURN(p.normalization, NormalizationFromJson(checkpoint.manifest.normalization));
    if (!config.resume().empty() && checkpoint.trainer_state_path.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("checkpoint ", ref, " has no trainer_state to resume from"));
    }
    p.parent_id = checkpoint.id;
    (config.resume().empty() ? p.init : p.resume) = std::move(checkpoint);
  } else {
    ROBOLOOP_ASSIGN_OR_RETURN(p.policy_options, PolicyOptionsFromSpec(config.policy(), p.features.obs_dim, p.features.action_dim));
    ROBOLOOP_ASSIGN_OR_RETURN(p.policy_options, WithCameras(std::move(p.policy_options), p.features));
  }
  return p;
}

// Every feature training reads: obs, images, then the action.
std::vector<std::string> LoadedFeatures(const DatasetFeatures& features, const v1::TrainConfig& config) {
  std::vector<std::string> names = features.obs;
  names.insert(names.end(), features.images.begin(), features.images.end());
  names.push_back(config.action_feature());
  return names;
}

// The training features of the demos of mask `split` ("" = every demo), as float32; with
// `log_conversions`, each feature converted from another dtype is logged once.
absl::StatusOr<std::shared_ptr<const data::EpisodeStore>> LoadStore(const Prepared& p, const v1::TrainConfig& config,
                                                                    const std::string& split, bool log_conversions) {
  const std::vector<std::string> paths = p.dataset.paths();
  data::EpisodeStore::Options store_options;
  store_options.path = paths.front();
  store_options.more_paths.assign(paths.begin() + 1, paths.end());
  store_options.features = LoadedFeatures(p.features, config);
  store_options.split = split;
  store_options.as_float32 = true;
  ROBOLOOP_ASSIGN_OR_RETURN(auto store, data::EpisodeStore::Load(store_options));
  if (log_conversions) {
    for (const data::EpisodeStore::Conversion& c : store->conversions()) {
      spdlog::info("{}: {} is stored as {}; converted to float32 for training", store->path(), c.feature,
                   data::DTypeName(c.stored));
    }
  }
  return std::shared_ptr<const data::EpisodeStore>(std::move(store));
}

// The training demos as the loader reads them: loaded in memory when they fit in the data
// cache (or the resumed run sampled them so), else streamed through the cache.
struct TrainingData {
  std::shared_ptr<const data::EpisodeStore> store;  // in memory
  std::shared_ptr<data::EpisodeCache> cache;        // streamed
  data::EpisodeCache::Options cache_options;        // what `cache` was opened with
};

// `resumed_block_windows`: the resumed run's driver record (nullopt = a fresh run; 0 = it
// sampled in memory).
absl::StatusOr<TrainingData> OpenTrainingData(const Prepared& p, const v1::TrainConfig& config, bool leader,
                                              std::optional<int64_t> resumed_block_windows) {
  if (config.data_cache_mb() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--data-cache-mb (data_cache_mb) must be >= 0 (0 = default), got ", config.data_cache_mb()));
  }
  const std::vector<std::string> paths = p.dataset.paths();
  data::EpisodeCache::Options cache_options;
  cache_options.episodes.path = paths.front();
  cache_options.episodes.more_paths.assign(paths.begin() + 1, paths.end());
  cache_options.episodes.features = LoadedFeatures(p.features, config);
  cache_options.episodes.split = config.split();
  cache_options.episodes.as_float32 = true;
  cache_options.capacity_bytes = static_cast<int64_t>(config.data_cache_mb() * (1 << 20));
  TrainingData data;
  data.cache_options = cache_options;
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<data::EpisodeCache> cache, data::EpisodeCache::Open(cache_options));
  const bool fits = cache->total_bytes() <= cache->capacity_bytes();
  if (resumed_block_windows.has_value() ? *resumed_block_windows == 0 : fits) {
    if (!fits) {
      spdlog::warn("{}: {} bytes of training data exceed the data cache of {} bytes, but the resumed run sampled "
                   "them in memory: loading them to continue its sequence", p.dataset.Describe(), cache->total_bytes(),
                   cache->capacity_bytes());
    }
    ROBOLOOP_ASSIGN_OR_RETURN(data.store, LoadStore(p, config, config.split(), /*log_conversions=*/leader));
    return data;
  }
  if (leader) {
    spdlog::info("{}: {} bytes of training data exceed the data cache of {} bytes (--data-cache-mb): streaming",
                 p.dataset.Describe(), cache->total_bytes(), cache->capacity_bytes());
  }
  data.cache = std::move(cache);
  return data;
}

// The normalization of streamed training data. Every rank needs the statistics of the whole dataset before its first
// step, so each reads every episode once more for them, but only the obs and action features (never the frames), through
// a cache of its own that is dropped afterwards: the training cache reads only what the rank samples.
absl::StatusOr<Normalization> StreamedNormalization(const TrainingData& training, const std::vector<std::string>& obs,
                                                    const std::string& action_feature) {
  data::EpisodeCache::Options options = training.cache_options;
  options.episodes.features = obs;
  options.episodes.features.push_back(action_feature);
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<data::EpisodeCache> low_dim, data::EpisodeCache::Open(options));
  return NormalizationFromEpisodes(*low_dim, obs, action_feature);
}

// Steps between validation losses: validate_every, else checkpoint_every, else steps / 10.
int64_t ValidationInterval(const v1::TrainConfig& config) {
  if (config.validate_every() > 0) return config.validate_every();
  if (config.checkpoint_every() > 0) return config.checkpoint_every();
  return std::max<int64_t>(1, config.steps() / 10);
}

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
  const v1::TrainConfig& config = options.config;
  const bool leader = options.rank.rank == 0;
  ROBOLOOP_ASSIGN_OR_RETURN(Prepared p, Prepare(options));
  // The resumed run's driver record fixes how its sequence is sampled, so it is read first.
  ROBOLOOP_ASSIGN_OR_RETURN(const TorchRuntime* runtime, TorchRuntime::Load());
  const nlohmann::json runtime_info = nlohmann::json::parse(runtime->DescribeRuntime(), nullptr, false);
  ROBOLOOP_ASSIGN_OR_RETURN(const nlohmann::json trainer_config,
                            TrainerConfigJson(config, p.policy_options, options.rank));
  ROBOLOOP_ASSIGN_OR_RETURN(auto trainer, runtime->CreateTrainer(trainer_config.dump()));
  nlohmann::json resumed_state;
  std::optional<int64_t> resumed_block_windows;
  if (p.resume) {
    ROBOLOOP_ASSIGN_OR_RETURN(std::string driver, trainer->LoadState(p.resume->trainer_state_path));
    resumed_state = nlohmann::json::parse(driver, nullptr, false);
    if (!resumed_state.is_object() || !resumed_state.contains("step")) {
      return absl::InvalidArgumentError(absl::StrCat("checkpoint ", config.resume(), ": trainer state has no driver record"));
    }
    resumed_block_windows = resumed_state.value("stream_block_windows", int64_t{0});
  } else if (p.init) {
    ROBOLOOP_RETURN_IF_ERROR(trainer->LoadWeights(p.init->policy_path));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(TrainingData training, OpenTrainingData(p, config, leader, resumed_block_windows));
  if (!p.resume && !p.init) {
    if (training.store != nullptr) {
      ROBOLOOP_ASSIGN_OR_RETURN(p.normalization,
                                NormalizationFromStore(*training.store, p.features.obs, config.action_feature()));
    } else {
      ROBOLOOP_ASSIGN_OR_RETURN(p.normalization,
                                StreamedNormalization(training, p.features.obs, config.action_feature()));
    }
  }
  LoaderOptions loader_options;
  loader_options.obs_features = p.features.obs;
  loader_options.image_features = p.features.images;
  loader_options.action_feature = config.action_feature();
  loader_options.history = p.policy_options.value("history", 1);
  loader_options.chunk = p.policy_options.value("chunk", 1);
  loader_options.batch_size = config.batch_size();
  loader_options.seed = config.seed();
  loader_options.rank = options.rank.rank;
  loader_options.world_size = options.rank.world_size;
  loader_options.num_workers = config.loader_workers();
  loader_options.prefetch = config.prefetch();
  std::unique_ptr<Loader> loader;
  if (training.store != nullptr) {
    ROBOLOOP_ASSIGN_OR_RETURN(loader, Loader::Create(training.store, p.normalization, loader_options));
  } else {
    ROBOLOOP_ASSIGN_OR_RETURN(loader, Loader::CreateStreaming(training.cache, p.normalization, loader_options,
                                                              resumed_block_windows.value_or(0)));
  }
  // Rank 0 alone computes the validation loss: it needs no collective, so the ranks stay in step.
  std::shared_ptr<const data::EpisodeStore> validation_store;
  std::unique_ptr<ValidationSet> validation;
  if (leader && !config.validation_split().empty()) {
    if (config.split().empty()) {
      spdlog::warn("{}: training on every demo, those of the validation split '{}' too (choose the training "
                   "demos with --split)", p.dataset.Describe(), config.validation_split());
    }
    ROBOLOOP_ASSIGN_OR_RETURN(validation_store, LoadStore(p, config, config.validation_split(), false));
    ROBOLOOP_ASSIGN_OR_RETURN(validation, ValidationSet::Create(*validation_store, p.normalization, loader_options));
  }

  std::unique_ptr<SampleTrace> trace;
  if (!options.sample_trace_dir.empty()) {
    ROBOLOOP_ASSIGN_OR_RETURN(trace, SampleTrace::Open(options.sample_trace_dir, options.rank.rank));
  }

  int64_t step = 0;
  std::string run_id = options.run_id;
  if (p.resume) {
    step = resumed_state["step"].get<int64_t>();
    loader->Seek(resumed_state.value("cursor", step));
    if (run_id.empty()) run_id = resumed_state.value("run_id", std::string());
  }
  if (run_id.empty()) run_id = NewUuid();

  std::unique_ptr<RunRecorder> recorder;
  if (leader) {
    ROBOLOOP_ASSIGN_OR_RETURN(recorder, RunRecorder::Create(options, run_id));
  }
  TrainRunResult result;
  result.run_id = run_id;
  std::string parent_id = p.parent_id;
  std::string config_json;
  (void)google::protobuf::util::MessageToJsonString(config, &config_json);

  LookaheadBatches batches(*loader, *trainer, config.steps());
  std::optional<double> validation_loss;  // the latest, computed after `validated_step` steps
  int64_t validated_step = -1;
  // Saves and registers the state after `completed` steps (rank 0 only).
  auto checkpoint = [&](int64_t completed, double loss) -> absl::Status {
    if (!leader) return absl::OkStatus();
    const std::string dir = JoinPath(JoinPath(recorder->dir(), "checkpoints"), absl::StrCat("step_", completed));
    ROBOLOOP_RETURN_IF_ERROR(MakeDirs(dir));
    const std::string policy_path = JoinPath(dir, "policy.safetensors");
    const std::string state_path = JoinPath(dir, "trainer_state.pt");
    const nlohmann::json driver = {{"step", completed}, {"cursor", batches.cursor()}, {"run_id", run_id},
                                   {"seed", config.seed()}, {"world_size", options.rank.world_size},
                                   {"stream_block_windows", loader->block_windows()}};
    ROBOLOOP_RETURN_IF_ERROR(trainer->Save(policy_path, state_path, driver.dump()));
    CheckpointRecord record;
    record.model = config.model();
    record.policy_options = p.policy_options;
    record.obs_features = p.features.obs;
    record.obs_shapes = p.features.obs_shapes;
    record.cameras = p.features.cameras;
    record.action_dim = p.features.action_dim;
    record.normalization = NormalizationToJson(p.normalization);
    record.dataset_id = p.dataset.id;
    record.parent_id = parent_id;
    record.step = completed;
    record.metrics = {{"loss", loss}};
    if (validated_step == completed) record.metrics["validation_loss"] = *validation_loss;
    record.run_id = run_id;
    record.config_json = config_json;
    record.libtorch_version = runtime_info.value("libtorch_version", std::string());
    ROBOLOOP_ASSIGN_OR_RETURN(v1::Checkpoint registered,
                              RegisterCheckpoint(*options.registry, record, policy_path, state_path));
    parent_id = registered.id();
    result.checkpoint_id = registered.id();
    v1::TrainEvent event;
    v1::TrainEvent::CheckpointRegistered* c = event.mutable_checkpoint();
    c->set_step(completed);
    c->set_checkpoint_id(registered.id());
    c->set_model(registered.model());
    c->set_version(registered.version());
    return recorder->Emit(event);
  };
  // The validation loss after `completed` steps, emitted (rank 0 with a validation split only).
  auto validate = [&](int64_t completed) -> absl::Status {
    if (validation == nullptr) return absl::OkStatus();
    ROBOLOOP_ASSIGN_OR_RETURN(validation_loss, validation->Loss(*trainer, completed));
    validated_step = completed;
    v1::TrainEvent event;
    event.mutable_validation()->set_step(completed);
    event.mutable_validation()->set_loss(*validation_loss);
    event.mutable_validation()->set_windows(validation->windows());
    return recorder->Emit(event);
  };
  auto fail = [&](const absl::Status& status) -> absl::Status {
    if (leader) {
      v1::TrainEvent event;
      event.mutable_failed()->set_message(std::string(status.message()));
      (void)recorder->Emit(event);
    }
    return status;
  };

  double last_loss = 0;
  const Clock::time_point loop_start = Clock::now();
  const double waited_at_start = loader->wait_seconds();
  while (step < config.steps()) {
    if (common::IsCancelled(options.cancel)) {
      result.cancelled = true;
      break;
    }
    const Clock::time_point start = Clock::now();
    const double waited_before = loader->wait_seconds();
    absl::StatusOr<Batch> batch = batches.Next(step);
    if (!batch.ok()) return fail(batch.status());
    absl::StatusOr<TrainStepFigures> figures = trainer->Step(BatchView(*batch), step);
    if (!figures.ok()) {
      if (common::IsCancelled(options.cancel)) {
        result.cancelled = true;
        break;
      }
      return fail(figures.status());
    }
    ++step;
    last_loss = figures->loss;
    if (trace != nullptr) {
      if (absl::Status s = trace->Append(step, *batch); !s.ok()) return fail(s);
    }
    const double elapsed = Seconds(Clock::now() - start);
    if (leader && (step % config.log_every() == 0 || step == config.steps())) {
      v1::TrainEvent event;
      v1::TrainEvent::Step* s = event.mutable_step();
      s->set_step(step);
      s->set_loss(figures->loss);
      s->set_lr(figures->lr);
      s->set_grad_norm(figures->grad_norm);
      s->set_samples_per_s(elapsed > 0 ? config.batch_size() * options.rank.world_size / elapsed : 0);
      s->set_data_stall_pct(elapsed > 0 ? 100.0 * (loader->wait_seconds() - waited_before) / elapsed : 0);
      ROBOLOOP_RETURN_IF_ERROR(recorder->Emit(event));
    }
    if (step % ValidationInterval(config) == 0 || step == config.steps()) {
      if (absl::Status s = validate(step); !s.ok()) return fail(s);
    }
    if (config.checkpoint_every() > 0 && step % config.checkpoint_every() == 0 && step < config.steps()) {
      if (absl::Status s = checkpoint(step, last_loss); !s.ok()) return fail(s);
    }
  }
  const double loop_seconds = Seconds(Clock::now() - loop_start);
  if (absl::Status s = checkpoint(step, last_loss); !s.ok()) return fail(s);
  result.steps = step;
  result.final_loss = last_loss;
  if (training.cache != nullptr) {
    const data::EpisodeCache::Counters read = training.cache->counters();
    spdlog::info("rank {} of {}: read {} episodes ({} bytes) of {} while training", options.rank.rank,
                 options.rank.world_size, read.episodes_read, read.bytes_read, training.cache->num_episodes());
  }
  if (leader && !result.cancelled) {
    v1::TrainEvent event;
    event.mutable_finished()->set_checkpoint_id(result.checkpoint_id);
    event.mutable_finished()->set_steps(step);
    event.mutable_finished()->set_final_loss(last_loss);
    event.mutable_finished()->set_data_stall_pct(
        loop_seconds > 0 ? 100.0 * (loader->wait_seconds() - waited_at_start) / loop_seconds : 0);
    ROBOLOOP_RETURN_IF_ERROR(recorder->Emit(event));
  }
  return result;
}

}  // namespace roboloop::train
