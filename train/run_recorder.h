// Module-internal: rank 0's record of a training run, runs/<run_id>/ under the store: the
// events as JSON lines (train.jsonl), their scalars for TensorBoard, and the run's
// checkpoints folder.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "roboloop/v1/train.pb.h"
#include "train/run_log.h"

namespace roboloop::train {

// Writes one run's events; not thread-safe (the rank's loop alone emits).
class RunRecorder {
 public:
  // Creates runs/<run_id>/ (and its checkpoints/ folder) under the store at `root`; `on_event`
  // (optional) sees every event after it is written.
  static absl::StatusOr<std::unique_ptr<RunRecorder>> Create(const std::string& root, const std::string& run_id,
                                                             std::function<void(const v1::TrainEvent&)> on_event);

  // The run's folder.
  const std::string& dir() const { return dir_; }

  // Stamps `event` with the run id and the wall time, appends it to train.jsonl, adds its scalars (step figures,
  // validation loss) to TensorBoard, flushes TensorBoard after any event that is not a step, then calls on_event.
  // Errors: the log that could not be written.
  absl::Status Emit(v1::TrainEvent event);

 private:
  RunRecorder(std::string run_id, std::function<void(const v1::TrainEvent&)> on_event)
      : run_id_(std::move(run_id)), on_event_(std::move(on_event)) {}

  absl::Status AddScalars(const v1::TrainEvent& event);

  std::string run_id_;
  std::function<void(const v1::TrainEvent&)> on_event_;
  std::string dir_;
  std::unique_ptr<JsonlLog> jsonl_;
  std::unique_ptr<TensorBoardWriter> tensorboard_;
};

}  // namespace roboloop::train
