// The training step behind the ABI-3 trainer handle (issue 6, req 4-6): a policy module,
// AdamW (fused on CUDA) with a warm-up + cosine schedule, gradient clipping, bf16 or FP8 mixed
// precision over float32 master weights, optional EMA, gradient averaging across ranks, and exact
// save/restore of everything a resume needs. On one GPU with static shapes the step runs as a
// CUDA graph replay (graphed_step.h).
// Inside libroboloop_torch.so; the torch-free driver (train/trainer.h) owns the loop.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "train/torch/device_batches.h"
#include "train/torch/distributed.h"
#include "train/torch/graphed_step.h"
#include "train/torch/policy/policy_model.h"
#include "train/torch/precision.h"

namespace roboloop::train {

// Optimisation settings.
struct OptimizerOptions {
  double lr = 3e-4;             // peak learning rate
  double weight_decay = 0.01;   // AdamW decoupled decay, on weight matrices only
  double beta1 = 0.9;           // Adam first-moment decay
  double beta2 = 0.999;         // Adam second-moment decay
  double eps = 1e-8;            // Adam denominator epsilon
  int64_t warmup_steps = 0;     // linear warm-up from lr/warmup to lr
  int64_t total_steps = 1000;   // end of the cosine decay
  double min_lr_ratio = 0.1;    // the cosine decays to lr * min_lr_ratio
  double clip_norm = 1.0;       // max global gradient norm; 0 = no clipping
  double ema_decay = 0.0;       // EMA of weights (0 = off); the policy blob then holds the EMA
  std::optional<bool> fused;    // fused AdamW kernel (fused_adamw.h); unset = on CUDA only
};

// Everything a trainer is built from (the JSON of RoboloopTorchApi::trainer_create).
struct TrainerConfig {
  PolicyConfig policy;           // architecture
  OptimizerOptions optimizer;    // optimisation
  PrecisionOptions precision;    // fp32, bf16 or fp8 forward (precision.h)
  bool packed = true;            // transformer: packed varlen sequences (false = padded)
  std::optional<bool> cuda_graph;  // capture the step in a CUDA graph; unset = where
                                   // train/cuda_graph_rule.h allows it (auto)
  int64_t token_budget = 8192;   // transformer, packed: tokens per attention call
  uint64_t seed = 0;             // weight init and per-step noise
  int threads = 0;               // torch intra-op threads; 0 = leave as is
  torch::Device device = torch::kCPU;  // where parameters, optimizer state and batches live
  DistributedOptions distributed;  // rank, world, rendezvous
};

// Parses {policy, optimizer, precision, fp8_scaling, packed, cuda_graph, token_budget, seed,
// threads, device, distributed} (optimizer.bf16: true is the older spelling of precision: bf16).
// `device` takes the forms of train/training_device.h (default cpu), resolved with
// distributed.local_rank against the GPUs LibTorch sees; distributed.backend defaults to the
// device's (gloo on the CPU, nccl on CUDA). Throws naming the key at fault, or the device
// when it is not visible.
TrainerConfig ParseTrainerConfig(const nlohmann::json& json);

// One step's figures (averaged over ranks).
struct StepFigures {
  double loss = 0;       // training loss before the update
  double grad_norm = 0;  // global gradient norm before clipping
  double lr = 0;         // learning rate used
};

// A batch as raw arrays (layout of train/loader.h Batch); not owned.
struct BatchArrays {
  int batch = 0, history = 0, chunk = 0, obs_dim = 0, action_dim = 0;
  const float* obs = nullptr;
  const int32_t* history_length = nullptr;
  const float* actions = nullptr;
  const uint8_t* action_valid = nullptr;
  int image_bytes = 0;                // bytes of one row's frames (0 without cameras)
  const uint8_t* images = nullptr;    // batch x image_bytes (docs/vision.md)
};

// Thrown by Step when the loss or the gradient is NaN or Inf; no update was applied.
struct NonFiniteLoss : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Thrown by Step when its failure may be another rank's: a collective failed (a peer vanished or
// the collective's timeout passed), or the loss averaged over the ranks is not finite while this
// rank's own is. No update was applied.
struct PeerFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One replica of a data-parallel job. Not thread-safe.
class Trainer {
 public:
  // Checks that the device can train this policy at this precision (startup_checks.h) and that
  // cuda_graph: on can be honoured (train/cuda_graph_rule.h, naming the reason), builds
  // the model (seeded, on the CPU, so every device starts from the same weights), moves it to
  // the configured device, builds the optimizer and, for world_size > 1, joins the process group
  // and broadcasts rank 0's weights. Throws c10::Error on bad config, a device that cannot run
  // the setup, running out of device memory (naming the device, the model size and settings
  // that need less), or rendezvous failure.
  static std::unique_ptr<Trainer> Create(const TrainerConfig& config);

  // Runs forward, backward (gradients averaged across ranks), clipping and the AdamW update
  // for global step `step` (which seeds the step's noise and the frames' random shifts, drawn
  // on the CPU whatever the device, so a seed draws the same noise everywhere). Throws NonFiniteLoss naming the
  // step when this rank's loss or the averaged gradient norm is not finite (no update applied on any rank; a rank
  // whose own loss is finite throws PeerFailure when another rank's is not), PeerFailure naming the step when a
  // collective fails (a peer vanished or the timeout passed), and
  // c10::Error naming the device and the model size when the first step runs out of memory.
  // With a CUDA graph the figures and the contract are the same: the first
  // GraphedStep::kWarmupSteps steps run eagerly, later ones replay the graph, whose update is
  // skipped on the device when the loss or the gradient norm is not finite (NonFiniteLoss is
  // thrown after the replay); a batch of other shapes than the captured one runs eagerly. When
  // the capture fails, cuda_graph: on throws GraphCaptureError, and auto warns once and takes
  // this step and every later one eagerly.
  StepFigures Step(const BatchArrays& batch, int64_t step);

  // Starts moving `batch`, the batch Step will take at global step `step`, to the device, so
  // that on a GPU its copy runs while the step before it computes (device_batches.h); Step with
  // the same arrays then uses it. The arrays are read before it returns. Does nothing on the
  // CPU. Throws c10::Error when pinned or device memory cannot be had.
  void Stage(const BatchArrays& batch, int64_t step);

  // The mean loss of `batch` under the current (not the EMA) weights, with no update, no
  // gradient and no collective (each rank evaluates on its own). The loss's noise is a pure
  // function of (seed, rank, `step`) drawn apart from the training steps' noise, so validating
  // leaves the training run bit for bit unchanged.
  double ValidationLoss(const BatchArrays& batch, int64_t step);

  // Writes the inference weights (the EMA when enabled) to `policy_path` as safetensors, and
  // parameters, EMA, optimizer state and `driver_state` to `state_path`. The policy file and
  // the state's parameters are CPU tensors whatever the device; LoadState maps the rest, so a
  // checkpoint loads on any machine.
  void Save(const std::string& policy_path, const std::string& state_path,
            const std::string& driver_state);
  // Restores a state written by Save (bitwise), on whichever device wrote it, onto this
  // trainer's device; returns its driver_state. A captured CUDA graph is dropped (it reads the
  // replaced AdamW moments): the next steps warm up and capture anew. Throws naming the file
  // when it does not fit this model.
  std::string LoadState(const std::string& state_path);
  // Replaces the weights with a policy file (fine-tuning); optimizer state is kept fresh.
  void LoadWeights(const std::string& policy_path);

  // Learning rate of global step `step` under the schedule.
  double LearningRate(int64_t step) const;

 private:
  explicit Trainer(const TrainerConfig& config);

  // Moves the model to the device, builds the optimizer, joins the ranks and copies the EMA.
  void SetUp();
  // Step's work (Step adds the out-of-memory message of the first step).
  StepFigures TakeStep(const BatchArrays& batch, int64_t step);
  // The step taken eagerly, drawing its noise from `generator` unless `noise` holds it.
  StepFigures EagerStep(const PolicyInputs& inputs, torch::Generator generator, const LossNoise& noise,
                        int64_t step);
  // The step as a replay of graph_ (capturing it first when it is not yet).
  StepFigures ReplayStep(const PolicyInputs& inputs, const LossNoise& noise, int64_t step);
  // The step graph_ captures (graphed_step.h CapturableStep).
  torch::Tensor CapturableTrainingStep(const PolicyInputs& inputs, const LossNoise& noise, const torch::Tensor& lr,
                                       const torch::Tensor& count);
  // A fresh graph of this trainer's step (warm-up and capture still to come).
  std::unique_ptr<GraphedStep> MakeGraphedStep();
  // Rethrows a start-up out-of-memory error as one naming the device, the model size and the
  // settings that need less memory.
  [[noreturn]] void ThrowOutOfMemory(const c10::OutOfMemoryError& error, const std::string& phase,
                                     int64_t batch) const;
  // The FP8 scaling of the transformer's linears while computing a loss; nullopt unless fp8.
  std::optional<Fp8Scaling> Fp8Linears() const;
  void UpdateEma();
  // The batch of global step `step` as tensors on the device (staged ones where Stage was
  // called); throws when its dims differ from the policy's, or its image_bytes from the bytes
  // of the policy's cameras.
  PolicyInputs Inputs(const BatchArrays& batch, int64_t step);
  // The loss settings of this trainer drawing noise (and, with `augment`, the frames' random
  // shifts) from `generator`.
  LossOptions LossSettings(torch::Generator generator, bool augment) const;

  TrainerConfig config_;
  std::shared_ptr<PolicyModel> model_;
  std::vector<torch::Tensor> parameters_;
  std::vector<torch::Tensor> ema_;
  std::unique_ptr<torch::optim::AdamW> optimizer_;
  std::unique_ptr<ProcessGroup> group_;
  std::unique_ptr<GradientAverager> gradients_;
  std::unique_ptr<CudaBatchStaging> staging_;  // CUDA devices only
  std::unique_ptr<GraphedStep> graph_;         // where the step runs as a CUDA graph
  int64_t steps_taken_ = 0;  // Step calls on this trainer
};

// Copies safetensors weights into `module`'s parameters; every parameter must be present with
// its shape and no extra tensor may remain. Throws naming the file and the tensor.
void LoadModuleWeights(torch::nn::Module& module, const std::string& path);

}  // namespace roboloop::train
