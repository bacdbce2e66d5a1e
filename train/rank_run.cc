#include "train/rank_run.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "spdlog/spdlog.h"
#include "common/fs.h"
#include "common/ids.h"
#include "common/status.h"
#include "data/validation_in_child.h"
#include "train/cuda_graph_rule.h"
#include "train/policy_spec_options.h"

namespace roboloop::train {
namespace {

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


absl::StatusOr<Prepared> Prepare(const TrainRunOptions& options) {
  const v1::TrainConfig& config = options.config;
  Prepared p;
  const std::string cache = JoinPath(options.root, "cache");
  std::vector<std::string> refs(config.datasets().begin(), config.datasets().end());
  if (!config.dataset().empty()) refs.insert(refs.begin(), config.dataset());
  // No thread of this process reads HDF5 yet, so a file from elsewhere can be checked in a child process first.
  // Registered (by rank 0) only once the data has opened: PrepareRankRun.
  ROBOLOOP_ASSIGN_OR_RETURN(p.dataset, ResolveDatasetSet(*options.registry, refs, cache, /*register_files=*/false,
                                                       data::ScreenFileInChildProcess));
  ROBOLOOP_ASSIGN_OR_RETURN(p.features, ReadSetFeatures(p.dataset.paths(), config));
  if (!config.resume().empty() && !config.init_from().empty()) {
    return absl::InvalidArgumentError("--resume and --init-from exclude each other");
  }
  const std::string& ref = config.resume().empty() ? config.init_from() : config.resume();
  if (!ref.empty()) {
    ROBOLOOP_ASSIGN_OR_RETURN(FetchedCheckpoint checkpoint, FetchCheckpoint(*options.registry, ref, cache));
    absl::StatusOr<nlohmann::json> policy_options = PolicyOptionsFromCheckpoint(checkpoint, ref, p.features);
    if (!policy_options.ok()) {
      return Annotate(policy_options.status(), absl::StrCat("dataset ", p.dataset.Describe()));
    }
    p.policy_options = *std::move(policy_options);
    if (!config.resume().empty() && checkpoint.trainer_state_path.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("checkpoint ", ref, " has no trainer_state to resume from"));
    }
    if (checkpoint.manifest.normalization.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("checkpoint ", ref, " records no normalization statistics to "
                                                     "fine-tune from (registered without --normalization)"));
    }
    absl::StatusOr<Normalization> normalization = NormalizationFromJson(checkpoint.manifest.normalization);
    if (!normalization.ok()) return Annotate(normalization.status(), absl::StrCat("checkpoint ", ref));
    p.normalization = *std::move(normalization);
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

// `resumed_block_windows`: the resumed run's driver record (nullopt = a fresh run; 0 = it
// sampled in memory).
absl::StatusOr<TrainingData> OpenTrainingData(const Prepared& p, const v1::TrainConfig& config, bool leader,
                                              std::optional<int64_t> resumed_block_windows) {
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
  if (leader && fits) {
    spdlog::info("{}: {} bytes of training data fit the data cache of {} bytes, but the resumed run streamed them: "
                 "streaming to continue its sequence", p.dataset.Describe(), cache->total_bytes(),
                 cache->capacity_bytes());
  } else if (leader) {
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

absl::StatusOr<StartingState> LoadStartingState(const Prepared& p, const v1::TrainConfig& config,
                                                TorchTrainer& trainer) {
  StartingState start;
  if (p.resume) {
    ROBOLOOP_ASSIGN_OR_RETURN(std::string driver, trainer.LoadState(p.resume->trainer_state_path));
    start.driver = nlohmann::json::parse(driver, nullptr, false);
    if (!start.driver.is_object() || !start.driver.contains("step")) {
      return absl::InvalidArgumentError(
          absl::StrCat("checkpoint ", config.resume(), ": trainer state has no driver record"));
    }
    start.block_windows = start.driver.value("stream_block_windows", int64_t{0});
  } else if (p.init) {
    ROBOLOOP_RETURN_IF_ERROR(trainer.LoadWeights(p.init->policy_path));
  }
  return start;
}

// The normalization of a run that starts from scratch: the statistics of its training data.
absl::StatusOr<Normalization> FreshNormalization(const Prepared& p, const TrainingData& training,
                                                 const v1::TrainConfig& config) {
  if (training.store != nullptr) {
    return NormalizationFromStore(*training.store, p.features.obs, config.action_feature());
  }
  return StreamedNormalization(training, p.features.obs, config.action_feature());
}

LoaderOptions LoaderOptionsFor(const Prepared& p, const TrainRunOptions& options) {
  const v1::TrainConfig& config = options.config;
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
  return loader_options;
}

// The loader over the training data in memory, or streamed in the resumed run's blocks.
absl::StatusOr<std::unique_ptr<Loader>> CreateLoader(const TrainingData& training, const Normalization& normalization,
                                                     const LoaderOptions& loader_options,
                                                     std::optional<int64_t> resumed_block_windows) {
  if (training.store != nullptr) return Loader::Create(training.store, normalization, loader_options);
  return Loader::CreateStreaming(training.cache, normalization, loader_options, resumed_block_windows.value_or(0));
}

absl::StatusOr<ValidationData> OpenValidation(const Prepared& p, const v1::TrainConfig& config,
                                              const LoaderOptions& loader_options) {
  ValidationData validation;
  if (config.validation_split().empty()) return validation;
  if (config.split().empty()) {
    spdlog::warn("{}: training on every demo, those of the validation split '{}' too (choose the training "
                 "demos with --split)", p.dataset.Describe(), config.validation_split());
  } else if (config.split() == config.validation_split()) {
    spdlog::warn("{}: the validation split '{}' is the training split: its loss is no held-out loss",
                 p.dataset.Describe(), config.validation_split());
  }
  ROBOLOOP_ASSIGN_OR_RETURN(validation.store, LoadStore(p, config, config.validation_split(), false));
  ROBOLOOP_ASSIGN_OR_RETURN(validation.set, ValidationSet::Create(*validation.store, p.normalization, loader_options));
  return validation;
}

// The id of the run: the one asked for, else the resumed run's, else a new one.
std::string RunIdFor(const TrainRunOptions& options, const StartingState& start) {
  std::string run_id = options.run_id;
  if (run_id.empty() && start.driver.is_object()) run_id = start.driver.value("run_id", std::string());
  return run_id.empty() ? NewUuid() : run_id;
}

}  // namespace

absl::StatusOr<std::unique_ptr<RankRun>> PrepareRankRun(const TrainRunOptions& options) {
  const v1::TrainConfig& config = options.config;
  const bool leader = options.rank.rank == 0;
  auto run = std::make_unique<RankRun>();
  ROBOLOOP_ASSIGN_OR_RETURN(run->p, Prepare(options));
  ROBOLOOP_ASSIGN_OR_RETURN(const TorchRuntime* runtime, TorchRuntime::Load());
  run->runtime_info = nlohmann::json::parse(runtime->DescribeRuntime(), nullptr, false);
  ROBOLOOP_ASSIGN_OR_RETURN(const nlohmann::json trainer_config,
                            TrainerConfigJson(config, run->p.policy_options, options.rank));
  ROBOLOOP_ASSIGN_OR_RETURN(run->trainer, runtime->CreateTrainer(trainer_config.dump()));
  // The resumed run's driver record fixes how its sequence is sampled, so it is read before the data is opened.
  ROBOLOOP_ASSIGN_OR_RETURN(run->start, LoadStartingState(run->p, config, *run->trainer));
  ROBOLOOP_ASSIGN_OR_RETURN(run->training, OpenTrainingData(run->p, config, leader, run->start.block_windows));
  if (!run->p.resume && !run->p.init) {
    ROBOLOOP_ASSIGN_OR_RETURN(run->p.normalization, FreshNormalization(run->p, run->training, config));
  }
  const LoaderOptions loader_options = LoaderOptionsFor(run->p, options);
  ROBOLOOP_ASSIGN_OR_RETURN(run->loader, CreateLoader(run->training, run->p.normalization, loader_options,
                                                      run->start.block_windows));
  if (leader) {
    ROBOLOOP_ASSIGN_OR_RETURN(run->validation, OpenValidation(run->p, config, loader_options));
  }
  if (!options.sample_trace_dir.empty()) {
    ROBOLOOP_ASSIGN_OR_RETURN(run->trace, SampleTrace::Open(options.sample_trace_dir, options.rank.rank));
  }
  if (run->p.resume) {
    run->first_step = run->start.driver["step"].get<int64_t>();
    run->loader->Seek(run->start.driver.value("cursor", run->first_step));
  }
  run->run_id = RunIdFor(options, run->start);
  if (leader) {
    ROBOLOOP_RETURN_IF_ERROR(RegisterDatasetSet(*options.registry, run->p.dataset, JoinPath(options.root, "cache")));
    ROBOLOOP_ASSIGN_OR_RETURN(run->recorder, RunRecorder::Create(options.root, run->run_id, options.on_event));
  }
  return run;
}

}  // namespace roboloop::train
