// Training data loader: samples (episode, t) windows from an in-memory EpisodeStore, or from
// episodes streamed through a bounded EpisodeCache, in a seeded, rank-sharded order and builds
// padded [batch, history, obs] / [batch, chunk, action] batches, with each sample's camera
// frames (docs/vision.md), on background threads.
// Torch-free. See train/README.md for both sampling contracts.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/uninitialized_bytes.h"
#include "data/episode_cache.h"
#include "data/episode_store.h"
#include "train/normalization.h"
#include "train/torch_api.h"

namespace roboloop::train {

// What a loader samples and how: the features of a sample, its window, the batch and this
// rank's share of it, and the background work that builds batches.
struct LoaderOptions {
  // Concatenated, in this order, into one obs row (each feature's per-step elements flattened).
  std::vector<std::string> obs_features;
  std::string action_feature = "actions";  // the action feature, float32 [T, action_dim]
  // Camera frames, uint8 [T, H, W, 3] features (obs/<camera>_image), in the policy's camera
  // order; never part of the obs row or its normalization. Empty for a state-only policy.
  std::vector<std::string> image_features;
  int history = 1;        // observation steps per sample: t-history+1 .. t
  int chunk = 1;          // future actions per sample: a_t .. a_{t+chunk-1}
  int batch_size = 64;    // samples per batch on this rank
  uint64_t seed = 0;      // sampling seed
  int rank = 0;           // this rank
  int world_size = 1;     // ranks sharing the global batch
  int num_workers = 2;    // background threads building batches
  int prefetch = 4;       // bounded queue length (batches)
  bool normalize = true;  // apply Normalization to obs and actions
};

// One rank's batch, row-major.
struct Batch {
  int64_t index = 0;  // global batch index (the loader cursor that produced it)
  int batch_size = 0;  // samples
  int history = 0;     // obs steps per sample
  int chunk = 0;       // actions per sample
  int obs_dim = 0;     // elements of one obs row
  int action_dim = 0;  // elements of one action row
  // [batch, history, obs_dim]; missing history before the episode start is padded by
  // repeating the episode's first obs (left padding).
  std::vector<float> obs;
  std::vector<int32_t> history_length;  // [batch] real (not padded) obs steps, 1..history
  // [batch, chunk, action_dim]; steps past the episode end repeat its last action.
  std::vector<float> actions;
  std::vector<uint8_t> action_valid;  // [batch, chunk] 1 = real action, 0 = padding by repetition
  int image_bytes = 0;                // bytes of one sample's frames (0 without image features)
  // [batch, image_bytes]: each sample's frames at its step t (its last obs step), the cameras
  // of LoaderOptions::image_features back to back, raw uint8 (RoboloopTrainBatch::images).
  UninitializedBytes images;
  // [batch] each sample's window: its episode (the index in the dataset's episode order: the
  // store's, or the cache's over a dataset set) and its step t (the last obs step).
  std::vector<int64_t> sample_episode;
  std::vector<int64_t> sample_step;
};

// The ABI view of `batch` (its arrays, not copied) that TorchTrainer takes; images is null
// when the batch has none.
RoboloopTrainBatch BatchView(const Batch& batch);

class BatchSource;

// Thread-safety: Next, Seek, cursor and wait_seconds may be called from any thread, but the
// batch order is defined by the cursor, so one consumer thread is the intended use. Workers
// build batches [cursor, cursor + prefetch) in parallel; Next returns them in cursor order.
class Loader {
 public:
  // Validates `options` against `store` and starts the workers at cursor 0. Errors: missing
  // features, an obs or action feature that is not float32 or an image feature that is not
  // uint8 [T, H, W, 3] (named, with the file), history/chunk/batch_size/world_size/
  // num_workers/prefetch < 1, rank outside [0, world_size), batch_size * world_size larger
  // than the number of windows, and (with normalize) `norm` sizes that differ from the obs or
  // action row width.
  static absl::StatusOr<std::unique_ptr<Loader>> Create(
      std::shared_ptr<const data::EpisodeStore> store, const Normalization& norm,
      const LoaderOptions& options);
  // A loader streaming from `cache` under the streaming contract with blocks of
  // `block_windows` windows (0 = StreamBatches::DefaultBlockWindows). Errors as Create's,
  // plus a first episode that cannot be read and an epoch 0 that leaves a rank fewer windows
  // than batch_size.
  static absl::StatusOr<std::unique_ptr<Loader>> CreateStreaming(
      std::shared_ptr<data::EpisodeCache> cache, const Normalization& norm,
      const LoaderOptions& options, int64_t block_windows = 0);
  // Stops and joins the workers.
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // The batch at the cursor, then advances the cursor; blocks until a worker has built it and
  // adds the blocked time to wait_seconds(). Fails when the cursor was Seek'ed below 0, or
  // with the error of building it (a streamed read); the cursor then stays.
  absl::StatusOr<Batch> Next();
  // Index of the batch Next() returns next.
  int64_t cursor() const;
  // Restarts so that Next() returns batch `cursor` (exact resume); drops prefetched batches.
  void Seek(int64_t cursor);
  // Total time Next() spent waiting for a batch (data stall), in seconds.
  double wait_seconds() const;
  // Number of (episode, t) windows: every step of every loaded (or streamed) episode.
  int64_t windows() const;
  // In memory: windows / (batch_size * world_size), rounded down (the last partial batch is
  // dropped). Streaming: epoch 0's batches (epochs may differ, see train/README.md).
  int64_t batches_per_epoch() const;
  // Windows per streamed block; 0 when the loader samples an in-memory store.
  int64_t block_windows() const;

 private:
  Loader(std::unique_ptr<BatchSource> source, const LoaderOptions& options);
  void WorkerLoop();
  bool CanBuild() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool NextReady() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::unique_ptr<BatchSource> source_;
  const LoaderOptions options_;

  mutable absl::Mutex mu_;
  int64_t cursor_ ABSL_GUARDED_BY(mu_) = 0;         // next batch Next() returns
  int64_t next_to_build_ ABSL_GUARDED_BY(mu_) = 0;  // next batch a worker claims
  int64_t generation_ ABSL_GUARDED_BY(mu_) = 0;     // bumped by Seek; stale builds are dropped
  std::map<int64_t, absl::StatusOr<Batch>> ready_ ABSL_GUARDED_BY(mu_);  // built, not yet returned
  double wait_seconds_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  std::vector<std::thread> workers_;
};

}  // namespace roboloop::train
