// Torch-free access to the on-demand LibTorch library. Including this header never pulls in
// LibTorch; calling TorchRuntime::Load() maps it into the process (once).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "train/torch_api.h"

namespace roboloop::train {

// An inference policy living in libroboloop_torch.so (ABI 2 handle). Not thread-safe: one
// Act at a time; distinct instances may be used concurrently.
class TorchPolicy {
 public:
  ~TorchPolicy();
  TorchPolicy(const TorchPolicy&) = delete;
  TorchPolicy& operator=(const TorchPolicy&) = delete;

  // Writes batch x action_dim floats into `actions` from batch x obs_dim floats of `obs`.
  // With `batch_invariant` each row's result is independent of the batch (bit for bit).
  // InvalidArgument naming the policy's file on wrong dims or a LibTorch error.
  absl::Status Act(const float* obs, int batch, int obs_dim, float* actions, int action_dim,
                   bool batch_invariant);

  // For a policy reading `history` observation steps and writing `chunk` actions:
  // batch x chunk x action_dim raw actions from batch x history x obs_dim raw observations
  // (left-padded by repetition) with `history_length` real steps per row (see
  // RoboloopTorchApi::policy_act_chunk). InvalidArgument naming the file on a mismatch.
  absl::Status ActChunk(const float* obs, const int32_t* history_length, int batch, int history,
                        int obs_dim, float* actions, int chunk, int action_dim,
                        bool batch_invariant);

  // ActChunk for a policy that sees cameras (RoboloopTorchApi::policy_act_chunk_images):
  // `images` holds batch x image_bytes bytes, each row the frames of that row's current
  // observation, cameras back to back in the order of the policy's `cameras` option (uint8
  // H x W x 3, docs/vision.md). InvalidArgument naming the file on a mismatch (image_bytes
  // other than the cameras' total) or a LibTorch error.
  absl::Status ActChunkImages(const float* obs, const int32_t* history_length, const uint8_t* images,
                              int image_bytes, int batch, int history, int obs_dim, float* actions,
                              int chunk, int action_dim, bool batch_invariant);

  // The file the policy was loaded from.
  const std::string& path() const { return path_; }

 private:
  friend class TorchRuntime;
  TorchPolicy(std::string path, const RoboloopTorchApi* api, RoboloopTorchPolicy* handle)
      : path_(std::move(path)), api_(api), handle_(handle) {}

  std::string path_;
  const RoboloopTorchApi* api_;
  RoboloopTorchPolicy* handle_;
};

// Figures of one training step, averaged over ranks.
struct TrainStepFigures {
  double loss = 0;       // loss before the update
  double grad_norm = 0;  // gradient norm before clipping
  double lr = 0;         // learning rate used
};

// A data-parallel trainer replica living in libroboloop_torch.so (ABI 3+ handle). Not
// thread-safe.
class TorchTrainer {
 public:
  ~TorchTrainer();
  TorchTrainer(const TorchTrainer&) = delete;
  TorchTrainer& operator=(const TorchTrainer&) = delete;

  // One optimisation step at global step `step`. DataLoss naming the step when this rank's loss
  // or the gradient is NaN/Inf (no update applied); Unavailable naming the step when the failure
  // may be another rank's (a collective failed: a peer vanished or timed out; or only another
  // rank's loss is NaN/Inf); Internal for any other failure of this rank's own (a LibTorch error,
  // running out of memory), "step <step>: training step: <what>".
  absl::StatusOr<TrainStepFigures> Step(const RoboloopTrainBatch& batch, int64_t step);
  // Stages `batch` for Step at global step `step` (RoboloopTorchApi::trainer_stage): on a GPU
  // its copy overlaps the step called before that one. Internal on failure.
  absl::Status Stage(const RoboloopTrainBatch& batch, int64_t step);
  // The mean loss of `batch` under the current weights, without an update or a collective;
  // `step` seeds its noise (RoboloopTorchApi::trainer_validation_loss). Internal on failure.
  absl::StatusOr<double> ValidationLoss(const RoboloopTrainBatch& batch, int64_t step);
  // Writes the policy weights and the trainer state embedding `driver_state`.
  absl::Status Save(const std::string& policy_path, const std::string& state_path,
                    const std::string& driver_state);
  // Restores a state written by Save; returns its driver state.
  absl::StatusOr<std::string> LoadState(const std::string& state_path);
  // Replaces the weights with a policy safetensors file (fine-tuning).
  absl::Status LoadWeights(const std::string& policy_path);

 private:
  friend class TorchRuntime;
  TorchTrainer(const RoboloopTorchApi* api, RoboloopTorchTrainer* handle)
      : api_(api), handle_(handle) {}

  const RoboloopTorchApi* api_;
  RoboloopTorchTrainer* handle_;
};

// Handle to the loaded libroboloop_torch.so. Thread-safe: Load() may be called concurrently
// and returns the same instance; the instance is immutable and lives until process exit.
class TorchRuntime {
 public:
  // Loads the library on first call: from $ROBOLOOP_TORCH_LIBRARY when set (only there),
  // else next to the executable, else in ../lib relative to the executable's folder. Fails with
  // NOT_FOUND naming every path tried, or FAILED_PRECONDITION on an ABI version mismatch.
  static absl::StatusOr<const TorchRuntime*> Load();

  // Path of the library that was loaded.
  const std::string& path() const { return path_; }

  // Names of the environment variables Load set for LibTorch's OpenMP runtime in this process
  // (docs/training.md, "Threads"): {"GOMP_SPINCOUNT"}, or none where the user had set
  // OMP_WAIT_POLICY or GOMP_SPINCOUNT. A benchmark starts its peers without them, so that a
  // peer runs in the user's environment, not in roboloop's choice.
  static std::vector<std::string> VariablesChosenForOpenMp();

  // JSON object with LibTorch's version, intra/inter-op threads, parallel backend, BLAS
  // configuration and CUDA availability.
  std::string DescribeRuntime() const;

  // Loads the policy in `path` of `kind` (registry/policy_kind.h) with `options_json` (see
  // RoboloopTorchApi::load_policy). InvalidArgument naming the file and what is wrong: absent,
  // corrupt, an op this LibTorch lacks, weights that disagree with the options.
  absl::StatusOr<std::unique_ptr<TorchPolicy>> LoadPolicy(const std::string& path,
                                                          const std::string& kind,
                                                          const std::string& options_json) const;

  // Builds a trainer from `config_json` (train/torch/trainer.h ParseTrainerConfig); joins the
  // rendezvous when the world size is above 1. InvalidArgument on a bad config, Unavailable
  // when the rendezvous fails.
  absl::StatusOr<std::unique_ptr<TorchTrainer>> CreateTrainer(const std::string& config_json) const;

 private:
  TorchRuntime(std::string path, const RoboloopTorchApi* api) : path_(std::move(path)), api_(api) {}
  // Opens the library (LibraryCandidates' order) and checks its ABI version; Load's errors.
  static absl::StatusOr<const TorchRuntime*> Open();

  std::string path_;
  const RoboloopTorchApi* api_;
};

}  // namespace roboloop::train
