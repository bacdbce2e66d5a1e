// The fused AdamW update over torch::optim::AdamW's state.
#include "train/torch/fused_adamw.h"

#include <ATen/ops/_fused_adamw.h>

#include <map>
#include <optional>

namespace roboloop::train {
namespace {

// The parameters of one group that share a step count, with their state tensors.
struct Bucket {
  std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs;
};

}  // namespace

torch::Tensor FusedAdamW::step(LossClosure closure) {
  TORCH_CHECK(!closure, "FusedAdamW takes no closure");
  torch::NoGradGuard no_grad;
  for (torch::optim::OptimizerParamGroup& group : param_groups_) {
    const auto& options = static_cast<const torch::optim::AdamWOptions&>(group.options());
    TORCH_CHECK(!options.amsgrad(), "FusedAdamW does not implement amsgrad");
    // Parameters that skipped a step (no gradient) lag behind: one fused call per step count.
    std::map<int64_t, Bucket> buckets;
    for (const torch::Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      TORCH_CHECK(p.scalar_type() == torch::kFloat, "FusedAdamW keeps float32 master weights, got ",
                  p.scalar_type());
      std::unique_ptr<torch::optim::OptimizerParamState>& slot = state_[p.unsafeGetTensorImpl()];
      if (!slot) {
        auto fresh = std::make_unique<torch::optim::AdamWParamState>();
        fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        slot = std::move(fresh);
      }
      auto& state = static_cast<torch::optim::AdamWParamState&>(*slot);
      state.step(state.step() + 1);
      Bucket& bucket = buckets[state.step()];
      bucket.params.push_back(p);
      bucket.grads.push_back(p.grad());
      bucket.exp_avgs.push_back(state.exp_avg());
      bucket.exp_avg_sqs.push_back(state.exp_avg_sq());
    }
    const auto [beta1, beta2] = options.betas();
    for (const auto& [count, bucket] : buckets) {
      // The kernel only reads the step counts: one device scalar serves the whole bucket.
      const torch::Tensor step_count =
          torch::full({}, static_cast<double>(count), bucket.params[0].options().dtype(torch::kFloat));
      const std::vector<torch::Tensor> steps(bucket.params.size(), step_count);
      at::_fused_adamw_(bucket.params, bucket.grads, bucket.exp_avgs, bucket.exp_avg_sqs, {}, steps, options.lr(),
                        beta1, beta2, options.weight_decay(), options.eps(), /*amsgrad=*/false,
                        /*maximize=*/false);
    }
  }
  return {};
}

void FusedAdamW::StepOnDevice(const torch::Tensor& lr, const torch::Tensor& count, const torch::Tensor& found_inf) {
  torch::NoGradGuard no_grad;
  for (torch::optim::OptimizerParamGroup& group : param_groups_) {
    const auto& options = static_cast<const torch::optim::AdamWOptions&>(group.options());
    Bucket bucket;
    for (const torch::Tensor& p : group.params()) {
      TORCH_CHECK(p.grad().defined(), "FusedAdamW::StepOnDevice: a parameter has no gradient");
      const auto slot = state_.find(p.unsafeGetTensorImpl());
      TORCH_CHECK(slot != state_.end(), "FusedAdamW::StepOnDevice: a parameter has no state yet");
      const auto& state = static_cast<const torch::optim::AdamWParamState&>(*slot->second);
      bucket.params.push_back(p);
      bucket.grads.push_back(p.grad());
      bucket.exp_avgs.push_back(state.exp_avg());
      bucket.exp_avg_sqs.push_back(state.exp_avg_sq());
    }
    if (bucket.params.empty()) continue;
    const auto [beta1, beta2] = options.betas();
    const std::vector<torch::Tensor> steps(bucket.params.size(), count);
    at::_fused_adamw_(bucket.params, bucket.grads, bucket.exp_avgs, bucket.exp_avg_sqs, {}, steps, lr, beta1, beta2,
                      options.weight_decay(), options.eps(), /*amsgrad=*/false, /*maximize=*/false,
                      /*grad_scale=*/std::nullopt, found_inf);
  }
}

int64_t FusedAdamW::SharedStepCount() const {
  std::optional<int64_t> shared;
  for (const torch::optim::OptimizerParamGroup& group : param_groups_) {
    for (const torch::Tensor& p : group.params()) {
      const auto slot = state_.find(p.unsafeGetTensorImpl());
      TORCH_CHECK(slot != state_.end(), "FusedAdamW: a parameter has no state yet");
      const int64_t count = static_cast<const torch::optim::AdamWParamState&>(*slot->second).step();
      TORCH_CHECK(!shared || *shared == count, "FusedAdamW: parameters have taken different numbers of steps (",
                  *shared, " and ", count, "): one went without a gradient");
      shared = count;
    }
  }
  TORCH_CHECK(shared.has_value(), "FusedAdamW: no parameters");
  return *shared;
}

void FusedAdamW::AdvanceStepCounts() {
  for (torch::optim::OptimizerParamGroup& group : param_groups_) {
    for (const torch::Tensor& p : group.params()) {
      const auto slot = state_.find(p.unsafeGetTensorImpl());
      TORCH_CHECK(slot != state_.end(), "FusedAdamW: a parameter has no state yet");
      auto& state = static_cast<torch::optim::AdamWParamState&>(*slot->second);
      state.step(state.step() + 1);
    }
  }
}

}  // namespace roboloop::train
