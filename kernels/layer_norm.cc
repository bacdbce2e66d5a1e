// The differentiable layer norm over the rowwise kernels.
#include "kernels/layer_norm.h"

#include <ATen/Parallel.h>

#include "kernels/rowwise_core.h"

namespace roboloop::kernels {
namespace {

// Rows per task; also the block over which one partial weight/bias gradient is summed.
constexpr int64_t kRowsPerBlock = 64;

// An absent weight or bias travels through the custom autograd function as an empty tensor, so
// that every saved input is a defined tensor.
torch::Tensor AbsentAsEmpty(const torch::Tensor& t) {
  return t.defined() ? t.contiguous() : torch::empty({0}, torch::kFloat);
}

bool Present(const torch::Tensor& t) { return t.numel() > 0; }

const float* DataOrNull(const torch::Tensor& t) { return Present(t) ? t.data_ptr<float>() : nullptr; }

bool IsFloatCpuOrUndefined(const torch::Tensor& t) {
  return !t.defined() || (t.scalar_type() == torch::kFloat && t.device().is_cpu());
}

// Sums blocks [blocks][n] into [n], block by block in order.
torch::Tensor SumBlocksInOrder(const torch::Tensor& partial) {
  const int64_t blocks = partial.size(0), n = partial.size(1);
  torch::Tensor total = torch::zeros({n}, torch::kFloat);
  const float* in = partial.data_ptr<float>();
  float* out = total.data_ptr<float>();
  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t c = 0; c < n; ++c) out[c] += in[b * n + c];
  }
  return total;
}

class LayerNormFunction : public torch::autograd::Function<LayerNormFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias, double eps) {
    const torch::Tensor input = x.contiguous();
    const int64_t n = input.size(-1), rows = input.numel() / n;
    torch::Tensor y = torch::empty_like(input);
    torch::Tensor mean = torch::empty({rows}, torch::kFloat);
    torch::Tensor rstd = torch::empty({rows}, torch::kFloat);
    const RowwiseKernels& kernels = SelectedRowwiseKernels();
    const float* in = input.data_ptr<float>();
    const float* gamma = DataOrNull(weight);
    const float* beta = DataOrNull(bias);
    float* out = y.data_ptr<float>();
    float* means = mean.data_ptr<float>();
    float* rstds = rstd.data_ptr<float>();
    at::parallel_for(0, rows, kRowsPerBlock, [&](int64_t begin, int64_t end) {
      kernels.layer_norm_forward(in + begin * n, end - begin, n, gamma, beta, static_cast<float>(eps),
                                 out + begin * n, means + begin, rstds + begin);
    });
    ctx->save_for_backward({input, weight, mean, rstd});
    ctx->saved_data["has_bias"] = Present(bias);
    return y;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grad_outputs) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const torch::Tensor& input = saved[0];
    const torch::Tensor& weight = saved[1];
    const bool has_weight = Present(weight), has_bias = ctx->saved_data["has_bias"].toBool();
    const torch::Tensor dy = grad_outputs[0].to(torch::kFloat).contiguous();
    const int64_t n = input.size(-1), rows = input.numel() / n;
    const int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
    torch::Tensor dx = torch::empty_like(input);
    torch::Tensor dgamma_blocks = has_weight ? torch::zeros({blocks, n}, torch::kFloat) : torch::Tensor();
    torch::Tensor dbeta_blocks = has_bias ? torch::zeros({blocks, n}, torch::kFloat) : torch::Tensor();
    const RowwiseKernels& kernels = SelectedRowwiseKernels();
    const float* in = input.data_ptr<float>();
    const float* up = dy.data_ptr<float>();
    const float* means = saved[2].data_ptr<float>();
    const float* rstds = saved[3].data_ptr<float>();
    const float* gamma = DataOrNull(weight);
    float* out = dx.data_ptr<float>();
    float* dgamma = has_weight ? dgamma_blocks.data_ptr<float>() : nullptr;
    float* dbeta = has_bias ? dbeta_blocks.data_ptr<float>() : nullptr;
    at::parallel_for(0, blocks, 1, [&](int64_t first, int64_t last) {
      for (int64_t b = first; b < last; ++b) {
        const int64_t begin = b * kRowsPerBlock, count = std::min(kRowsPerBlock, rows - begin);
        kernels.layer_norm_backward(in + begin * n, up + begin * n, means + begin, rstds + begin,
                                    count, n, gamma, out + begin * n, dgamma ? dgamma + b * n : nullptr,
                                    dbeta ? dbeta + b * n : nullptr);
      }
    });
    return {dx, has_weight ? SumBlocksInOrder(dgamma_blocks) : torch::Tensor(),
            has_bias ? SumBlocksInOrder(dbeta_blocks) : torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor DifferentiableLayerNorm(const torch::Tensor& x, const torch::Tensor& weight,
                                      const torch::Tensor& bias, double eps) {
  const int64_t n = x.dim() > 0 ? x.size(-1) : 0;
  const bool rowwise = x.scalar_type() == torch::kFloat && x.device().is_cpu() && x.numel() > 0 &&
                       IsFloatCpuOrUndefined(weight) && IsFloatCpuOrUndefined(bias);
  if (!rowwise) return torch::layer_norm(x, {n}, weight, bias, eps);
  for (const torch::Tensor* t : {&weight, &bias}) {
    TORCH_CHECK(!t->defined() || (t->dim() == 1 && t->size(0) == n),
                "layer norm: weight and bias must be [", n, "] for input ", x.sizes(), ", got ",
                t->sizes());
  }
  return LayerNormFunction::apply(x, AbsentAsEmpty(weight), AbsentAsEmpty(bias), eps);
}

}  // namespace roboloop::kernels
