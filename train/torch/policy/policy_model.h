// Trainable policy modules (issue 6, req 2): one interface for training (a loss on a batch of
// windows) and for inference (a batch of observation histories -> a batch of action chunks).
// Inside libroboloop_torch.so only. Every tensor is float32 and lies on the module's device
// (the CPU, or a CUDA device in training) unless noted.
#pragma once

#include <memory>

#include <torch/torch.h>

#include "train/torch/policy/policy_config.h"

namespace roboloop::train {

// One batch of training windows, already normalised (see train/loader.h for the layout).
struct PolicyInputs {
  torch::Tensor obs;             // [batch, history, obs_dim], left-padded by repetition
  torch::Tensor history_length;  // int32 [batch]: real observation steps, 1..history
  torch::Tensor host_history_length;  // the same int32 [batch] on the CPU where the caller has it
                                      // (a GPU batch): packing plans from it instead of reading the
                                      // device back; undefined: history_length is read
  torch::Tensor actions;         // [batch, chunk, action_dim] targets (training only)
  torch::Tensor action_valid;    // [batch, chunk]: 1 real action, 0 padding (training only)
  torch::Tensor images;          // uint8 [batch, image_bytes]: frames of each row's last
                                 // observation step (docs/vision.md); undefined without cameras
};

// The random draws of a loss that can be made before it runs (PolicyModel::DrawLossNoise), so
// that the loss itself draws nothing from the host (a CUDA graph captures it).
struct LossNoise {
  torch::Tensor flow_noise;  // flow matching: standard normal [batch, chunk, action_dim]
  torch::Tensor flow_times;  // flow matching: uniform [0, 1) [batch]
};

// How the loss is computed.
struct LossOptions {
  bool packed = true;            // transformer: packed varlen attention; false = padded + mask
  int64_t token_budget = 8192;   // transformer, packed: most tokens per attention call
  torch::Generator generator;    // CPU source of flow-matching noise and times and of the
                                 // image augmentation's shifts (must be defined)
  bool augment = false;          // random-shift the frames (training steps only)
  LossNoise noise;               // drawn ahead, on the inputs' device; undefined tensors:
                                 // Loss draws them from `generator` itself
};

// A policy network. Loss and Act may be called from one thread at a time.
class PolicyModel : public torch::nn::Module {
 public:
  // Scalar training loss: the mean over samples of each sample's mean squared error over its
  // valid action entries (so that splitting a batch across ranks and averaging gives the
  // same value as the whole batch).
  virtual torch::Tensor Loss(const PolicyInputs& inputs, const LossOptions& options) = 0;
  // What Loss draws from its generator for `batch` windows, besides the frames' random shifts,
  // drawn from `generator` in Loss's order: Loss with these as LossOptions::noise computes
  // what Loss drawing from a generator in the same state computes. Empty for a policy that
  // draws nothing (the default).
  virtual LossNoise DrawLossNoise(int64_t batch, torch::Generator generator) const;
  // Normalised action chunks [batch, chunk, action_dim] for `obs`, `history_length` and
  // `images` (as in PolicyInputs; undefined for a policy without cameras). Records no autograd
  // history. Under a kernels::BatchInvariantScope each output row depends only on its own
  // inputs, bit for bit. Throws c10::Error when the images do not fit the policy's cameras.
  virtual torch::Tensor Act(const torch::Tensor& obs, const torch::Tensor& history_length,
                            const torch::Tensor& images) = 0;
  // The configuration the module was built from.
  virtual const PolicyConfig& config() const = 0;
};

// Builds the module of `config` with weights initialised from torch's global generator, with the
// factory registered for its kind (policy_models.cc); throws c10::Error naming a kind that has
// no model in this torch library.
std::shared_ptr<PolicyModel> MakePolicyModel(const PolicyConfig& config);

// Builds one architecture's module (reading its options from config.options).
using PolicyModelFactory = std::shared_ptr<PolicyModel> (*)(const PolicyConfig& config);

// Per-sample mean of (prediction - target)^2 over valid chunk steps and action dims, then the
// mean over samples. `valid` is [batch, chunk]; every sample must have one valid step.
torch::Tensor MaskedChunkLoss(const torch::Tensor& prediction, const torch::Tensor& target,
                              const torch::Tensor& valid);

// The MLP (policy_mlp.cc) and the transformer (policy_transformer.cc), registered in policy_models.cc.
std::shared_ptr<PolicyModel> MakeMlpModel(const PolicyConfig& config);
std::shared_ptr<PolicyModel> MakeTransformerModel(const PolicyConfig& config);

}  // namespace roboloop::train
