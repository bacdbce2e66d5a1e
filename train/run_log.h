// Per-run logs of training: a JSON-lines log and TensorBoard scalar event files (with a
// reader that verifies them). Torch-free.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/fs.h"
#include "nlohmann/json.hpp"

namespace roboloop::train {

// Appends one JSON object per line to a file; each line is written with one write(2) on an
// O_APPEND descriptor, so it is in the file (flushed) when Append returns. Thread-safe.
class JsonlLog {
 public:
  // Opens `path` for appending, creating it and its parent directories when missing.
  static absl::StatusOr<std::unique_ptr<JsonlLog>> Create(const std::string& path);

  // Appends `record` (a JSON object, else InvalidArgument) as one line.
  absl::Status Append(const nlohmann::json& record);
  // The log's file.
  const std::string& path() const { return path_; }

 private:
  JsonlLog(std::string path, UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}

  const std::string path_;
  absl::Mutex mu_;
  UniqueFd fd_ ABSL_GUARDED_BY(mu_);
};

// Writes TensorBoard scalars to `<dir>/events.out.tfevents.<unix seconds>.<hostname>`:
// TFRecord-framed tensorboard.Event protos, the first a file_version "brain.Event:2".
// Scalars are buffered until Flush (or 1 MiB of them, or destruction). Thread-safe.
class TensorBoardWriter {
 public:
  // Creates `dir` when missing and a new event file in it holding the file_version record;
  // AlreadyExists when a file of that name exists.
  static absl::StatusOr<std::unique_ptr<TensorBoardWriter>> Create(const std::string& dir);
  // Flushes; a failure is logged.
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // Buffers scalar `value` of `tag` at `step`, logged at `wall_time` (Unix seconds).
  absl::Status AddScalar(const std::string& tag, int64_t step, double wall_time, float value);
  // Writes the buffered records to the file.
  absl::Status Flush();
  // The event file.
  const std::string& path() const { return path_; }

 private:
  TensorBoardWriter(std::string path, UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}
  // Buffers `data` as one framed record, flushing past 1 MiB.
  absl::Status AppendRecord(const std::string& data);
  absl::Status FlushLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  absl::Mutex mu_;
  UniqueFd fd_ ABSL_GUARDED_BY(mu_);
  std::string buffer_ ABSL_GUARDED_BY(mu_);  // framed records not yet written
};

// One scalar read back from an event file.
struct TensorBoardScalar {
  std::string tag;         // e.g. "train/loss"
  int64_t step = 0;        // global step
  double wall_time = 0;    // Unix seconds
  float value = 0;         // the simple_value
};

// The scalars of the event file `path`, in file order. Verifies both CRCs of every record
// (DataLoss naming the file and the record's offset), that every record is an Event proto and
// that the first one is a file_version.
absl::StatusOr<std::vector<TensorBoardScalar>> ReadTensorBoardScalars(const std::string& path);

}  // namespace roboloop::train
