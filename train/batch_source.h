// Where the Loader's batches come from: an in-memory store (store_batches.h) or episodes
// streamed through a bounded cache (stream_batches.h). Torch-free.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "train/loader.h"

namespace roboloop::train {

// Builds batch k as a pure function of k and the source's options. Build may run on many
// threads at once.
class BatchSource {
 public:
  virtual ~BatchSource() = default;

  // Global batch `index` (>= 0) for this rank. `cursor` is the loader's cursor: batches below
  // it are done, so a source may drop what only they needed. Errors: a read's (streaming).
  virtual absl::StatusOr<Batch> Build(int64_t index, int64_t cursor) = 0;
  // Windows this source samples from (streaming: of every rank together).
  virtual int64_t windows() const = 0;
  // Batches of epoch 0 (in memory: of every epoch).
  virtual int64_t batches_per_epoch() const = 0;
  // Windows per streamed block (train/stream_sampling.h); 0 for an in-memory source.
  virtual int64_t block_windows() const = 0;
};

}  // namespace roboloop::train
