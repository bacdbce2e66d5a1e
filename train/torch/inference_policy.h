// Inference policies inside libroboloop_torch.so: the models behind the policy handle.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

namespace roboloop::train {

// Maps observation histories to action chunks. Implementations throw c10::Error or
// std::exception on bad input; the C edge (policy_abi.cc) turns them into messages. One call
// at a time.
class InferencePolicy {
 public:
  virtual ~InferencePolicy() = default;
  // Observation steps the policy reads (1 for single-step policies).
  virtual int64_t history() const { return 1; }
  // Actions it writes per call (1 for single-step policies).
  virtual int64_t chunk() const { return 1; }
  // Bytes of one observation's camera frames it reads (0: state only; docs/vision.md).
  virtual int64_t image_bytes() const { return 0; }
  // Actions for `obs` (float32 [batch, obs_dim]): the first action of the chunk for a history
  // of one step. With `batch_invariant` each output row depends only on its input row, bit for
  // bit.
  virtual torch::Tensor Forward(const torch::Tensor& obs, bool batch_invariant);
  // Action chunks [batch, chunk, action_dim] for raw obs [batch, history, obs_dim] (left-padded)
  // with history_length int32 [batch] and the frames `images` uint8 [batch, image_bytes()]
  // (undefined when image_bytes() is 0). Single-step policies use the last observation.
  virtual torch::Tensor ForwardChunk(const torch::Tensor& obs, const torch::Tensor& history_length,
                                     const torch::Tensor& images, bool batch_invariant) = 0;
};

// Loads a TorchScript file saved by torch.jit.save (scripted or traced), run between the
// normalization of its checkpoint (null or {} = identity; PolicyNormalization). Throws naming
// the op when the file calls an op this LibTorch lacks, or the normalization key at fault.
std::unique_ptr<InferencePolicy> LoadTorchScriptPolicy(const std::string& path, const nlohmann::json& normalization);

// Loads a policy of the trainable `kind` from the safetensors file `path` with `options`
// (train/torch_api.h load_policy), the normalization included. Throws naming the tensor or
// option at fault.
std::unique_ptr<InferencePolicy> LoadTrainablePolicy(const std::string& path, const std::string& kind,
                                                     const nlohmann::json& options);

}  // namespace roboloop::train
