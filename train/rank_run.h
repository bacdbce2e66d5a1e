// Module-internal: everything one training rank prepares before its first step (train_run.cc
// runs the steps): the dataset set and its features, the policy's options, the trainer with
// the starting weights or state, the training data in memory or streamed, the loader, the
// validation split, the run id and rank 0's recorder.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "data/episode_cache.h"
#include "data/episode_store.h"
#include "nlohmann/json.hpp"
#include "train/checkpoint_io.h"
#include "train/dataset_features.h"
#include "train/dataset_set.h"
#include "train/loader.h"
#include "train/normalization.h"
#include "train/run_recorder.h"
#include "train/sample_trace.h"
#include "train/torch_runtime.h"
#include "train/train_run.h"
#include "train/validation_loss.h"

namespace roboloop::train {

// What the run's configuration resolves to before anything is loaded.
struct Prepared {
  DatasetFeatures features;                 // what training reads of the dataset set
  ResolvedDatasetSet dataset;               // the files and the registered set
  nlohmann::json policy_options;            // the policy's architecture (the checkpoint's, or the spec's)
  Normalization normalization;              // the checkpoint's; a fresh run's is computed once the data is open
  std::optional<FetchedCheckpoint> resume;  // --resume's checkpoint
  std::optional<FetchedCheckpoint> init;    // --init-from's checkpoint
  std::string parent_id;                    // the checkpoint the run starts from ("" = none)
};

// The training demos as the loader reads them: loaded in memory when they fit in the data
// cache (or the resumed run sampled them so), else streamed through the cache.
struct TrainingData {
  std::shared_ptr<const data::EpisodeStore> store;  // in memory
  std::shared_ptr<data::EpisodeCache> cache;        // streamed
  data::EpisodeCache::Options cache_options;        // what `cache` was opened with
};

// How a run starts, read once the trainer holds the checkpoint's full state (resume) or its weights (fine-tune).
struct StartingState {
  nlohmann::json driver;                 // the resumed run's driver record (null for a fresh run)
  std::optional<int64_t> block_windows;  // nullopt = a fresh run; 0 = the resumed run sampled in memory
};

// The demos of the validation split, which rank 0 alone reads: the validation loss needs no collective, so the
// ranks stay in step.
struct ValidationData {
  std::shared_ptr<const data::EpisodeStore> store;
  std::unique_ptr<ValidationSet> set;  // null = no validation
};

// Everything one rank runs with, built in place before the first step: the loader and the validation set keep
// references to the normalization and the stores, so a RankRun never moves.
struct RankRun {
  Prepared p;                              // the resolved configuration
  nlohmann::json runtime_info;             // the torch library's description (its LibTorch version)
  std::unique_ptr<TorchTrainer> trainer;   // holding the starting weights or state
  StartingState start;                     // how the run starts
  TrainingData training;                   // the training demos
  std::unique_ptr<Loader> loader;          // their batches, from the run's cursor
  ValidationData validation;               // rank 0 only
  std::unique_ptr<SampleTrace> trace;      // null = no sample trace
  int64_t first_step = 0;                  // the resumed run's steps, else 0
  std::string run_id;                      // asked for, the resumed run's, or new
  std::unique_ptr<RunRecorder> recorder;   // rank 0 only
};

// Prepares this rank of the run `options` describes; every check that can be made before the first step is made
// here (RunTraining's contract). The resumed run's driver record is read before the data is opened, since it fixes
// how the run's sequence is sampled; the loader is seeked to the resumed run's cursor.
absl::StatusOr<std::unique_ptr<RankRun>> PrepareRankRun(const TrainRunOptions& options);

}  // namespace roboloop::train
