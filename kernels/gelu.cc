// The differentiable GELU over the rowwise kernels.
#include "kernels/gelu.h"

#include <ATen/Parallel.h>

#include "kernels/rowwise_core.h"

namespace roboloop::kernels {
namespace {

constexpr int64_t kElementsPerTask = 1 << 14;

class GeluFunction : public torch::autograd::Function<GeluFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x) {
    const torch::Tensor input = x.contiguous();
    torch::Tensor y = torch::empty_like(input);
    const RowwiseKernels& kernels = SelectedRowwiseKernels();
    const float* in = input.data_ptr<float>();
    float* out = y.data_ptr<float>();
    at::parallel_for(0, input.numel(), kElementsPerTask, [&](int64_t begin, int64_t end) {
      kernels.gelu(in + begin, end - begin, out + begin);
    });
    ctx->save_for_backward({input});
    return y;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grad_outputs) {
    const torch::Tensor input = ctx->get_saved_variables()[0];
    const torch::Tensor dy = grad_outputs[0].to(torch::kFloat).contiguous();
    torch::Tensor dx = torch::empty_like(input);
    const RowwiseKernels& kernels = SelectedRowwiseKernels();
    const float* in = input.data_ptr<float>();
    const float* upstream = dy.data_ptr<float>();
    float* out = dx.data_ptr<float>();
    at::parallel_for(0, input.numel(), kElementsPerTask, [&](int64_t begin, int64_t end) {
      kernels.gelu_backward(in + begin, upstream + begin, end - begin, out + begin);
    });
    return {dx};
  }
};

}  // namespace

torch::Tensor Gelu(const torch::Tensor& x) {
  if (x.scalar_type() != torch::kFloat || !x.device().is_cpu()) return torch::gelu(x);
  return GeluFunction::apply(x);
}

}  // namespace roboloop::kernels
