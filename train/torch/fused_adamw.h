// AdamW whose update runs as one fused kernel per parameter group (at::_fused_adamw_, issue 22,
// req 2): on CUDA one launch updates every parameter instead of about ten element-wise kernels
// per parameter. The state (step, exp_avg, exp_avg_sq per parameter) is torch::optim::AdamW's,
// so a state saved by either optimizer loads into the other. Inside libroboloop_torch.so.
#pragma once

#include <vector>

#include <torch/torch.h>

namespace roboloop::train {

// torch::optim::AdamW with the fused update. Parameters, gradients and state are float32 (the
// master weights stay float32 under bf16 autocast). Not thread-safe.
class FusedAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;

  // Applies one AdamW update (decoupled weight decay, bias correction) to every parameter that
  // has a gradient, with each group's lr, betas, eps and weight_decay; parameters without a
  // gradient are left alone and their step count does not advance. Returns an undefined tensor.
  // Throws c10::Error for a closure, amsgrad, or a group whose parameters are not float32 on one
  // device.
  torch::Tensor step(LossClosure closure = nullptr) override;

  // The update of step() for a CUDA graph (graphed_step.h): launches kernels only (no host
  // synchronisation, no allocation), so it can be captured and replayed. Reads the learning
  // rate from `lr` and the step count of every parameter from `count` (float32 0-d tensors on
  // the parameters' device; `count` already holds SharedStepCount() + 1), and leaves
  // parameters and moments unchanged where `found_inf` (float32 0-d, on the device) is 1.
  // Does not advance the step counts: AdvanceStepCounts does, once the update is known to
  // have been applied. Throws c10::Error for a parameter without a gradient or without state
  // (take one step() first).
  void StepOnDevice(const torch::Tensor& lr, const torch::Tensor& count, const torch::Tensor& found_inf);
  // The step count of every parameter; throws c10::Error when a parameter has no state or
  // their counts differ (a parameter that went without a gradient).
  int64_t SharedStepCount() const;
  // Adds one to every parameter's step count (after a StepOnDevice update that was applied).
  void AdvanceStepCounts();
};

}  // namespace roboloop::train
