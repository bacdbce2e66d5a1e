// The windows each rank of a run trained on, to audit how a data-parallel job shares out its
// data (docs/training.md, "Data parallel"). Torch-free.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/fs.h"
#include "train/loader.h"

namespace roboloop::train {

// The environment variable naming the folder of the traces (unset or empty: no trace).
inline constexpr char kSampleTraceVariable[] = "ROBOLOOP_SAMPLE_TRACE";

// One rank's trace: DIR/rank-<RANK>.tsv (keyed by the global rank, so that the ranks of every
// node may share DIR), one line "<step>\t<episode>\t<t>" per sample of each step, in sample
// order; a resumed run appends to it. Not thread-safe.
class SampleTrace {
 public:
  // Creates `dir` when missing and opens the trace of `rank` for appending. Errors name the
  // folder or file.
  static absl::StatusOr<std::unique_ptr<SampleTrace>> Open(const std::string& dir, int rank);

  // Appends the samples of `batch`, which step `step` (counted from 1) trained on. Errors name
  // the file.
  absl::Status Append(int64_t step, const Batch& batch);

 private:
  SampleTrace(std::string path, UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}

  const std::string path_;
  const UniqueFd fd_;
};

}  // namespace roboloop::train
