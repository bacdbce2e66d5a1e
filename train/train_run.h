// One rank of a training run (issue 6, req 1, 4-6, 8-9): the torch-free loop that feeds the
// loader's batches to the trainer in libroboloop_torch.so, logs, checkpoints, resumes and
// stops on a NaN loss. Rank 0 registers checkpoints and writes the run's logs.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/cancellation.h"
#include "registry/registry_client.h"
#include "roboloop/v1/train.pb.h"

namespace roboloop::train {

// Where this process sits in a data-parallel job (torchrun's variables).
struct RankInfo {
  int rank = 0;                           // RANK
  int world_size = 1;                     // WORLD_SIZE
  int local_rank = 0;                     // LOCAL_RANK
  std::string master_addr = "127.0.0.1";  // MASTER_ADDR
  int master_port = 29500;                // MASTER_PORT
};

// The job described by RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT, or nullopt
// when RANK and WORLD_SIZE are unset. InvalidArgument naming a malformed variable.
absl::StatusOr<std::optional<RankInfo>> RankInfoFromEnvironment();

// Inputs of one rank.
struct TrainRunOptions {
  v1::TrainConfig config;                 // the run (defaults filled by WithDefaults)
  RankInfo rank;                          // this rank
  std::string root = ".roboloop";         // state folder: runs/<run_id>/, cache/
  std::string run_id;                     // "" = a new one (or the resumed run's)
  registry::RegistryClient* registry = nullptr;  // datasets and checkpoints (not owned)
  std::function<void(const v1::TrainEvent&)> on_event;  // rank 0's events (optional)
  const common::CancellationToken* cancel = nullptr;  // cancelled = stop after the current step
  std::string sample_trace_dir;  // "" = none; else this rank's SampleTrace (train/sample_trace.h) there
};

// What a finished rank reports.
struct TrainRunResult {
  std::string run_id;         // the run
  std::string checkpoint_id;  // last registered checkpoint (rank 0; "" on other ranks)
  int64_t steps = 0;          // steps completed
  double final_loss = 0;      // loss of the last step
  bool cancelled = false;     // stopped by `cancel` (a checkpoint was registered first)
};

// `config` with every zero/empty field replaced by its documented default.
v1::TrainConfig WithDefaults(v1::TrainConfig config);

// Runs this rank. Everything that can be checked is checked before the first step: the
// ranges of the config's numbers (CheckTrainConfig), the dataset and its features, the policy kind (unknown names list the known ones), obs/action
// dims against a resumed or fine-tuned checkpoint, the checkpoint's blobs. A NaN/Inf loss
// stops the run with DataLoss naming the step; the checkpoints registered before stay. A
// failure is recorded for the launcher (RecordRankFailure, train/rank_failure.h).
absl::StatusOr<TrainRunResult> RunTraining(const TrainRunOptions& options);

}  // namespace roboloop::train
