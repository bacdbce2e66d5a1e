// The fused AdamW update over torch::optim::AdamW's state.
#include "train/torch/fused_adamw.h"

#include <ATen/ops/_fused_adamw.h>

#include <map>

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

}  // namespace roboloop::train
