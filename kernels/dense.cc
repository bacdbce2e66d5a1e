// The differentiable linear over the GEMM kernel, and its split over threads.
#include "kernels/dense.h"

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>

#include <algorithm>
#include <vector>

namespace roboloop::kernels {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The thread-th of `threads` blocks of C: row ranges (multiples of kGemmRowBlock) when C has at
// least as many rows as columns, else column-panel ranges.
GemmBlock ThreadBlock(int64_t m, int64_t n, int64_t thread, int64_t threads) {
  const int64_t panels = CeilDiv(n, kGemmPanelColumns);
  if (m >= n) {
    const int64_t row_blocks = CeilDiv(m, kGemmRowBlock);
    const int64_t begin = row_blocks * thread / threads, end = row_blocks * (thread + 1) / threads;
    return {begin * kGemmRowBlock, std::min(m, end * kGemmRowBlock), 0, panels};
  }
  return {0, m, panels * thread / threads, panels * (thread + 1) / threads};
}

// Below this many multiply-adds (~25 µs on one core) a GEMM runs on the calling thread alone:
// waking the other threads would cost more than they save.
constexpr int64_t kSerialMultiplyAdds = int64_t{1} << 20;

// C (contiguous [m][n]) = A B + bias over the intra-op threads.
void ParallelGemm(GemmBlockKernel kernel, MatrixView a, MatrixView b, int64_t m, int64_t n, int64_t k,
                  const float* bias, float* c) {
  const int64_t row_blocks = CeilDiv(m, kGemmRowBlock), panels = CeilDiv(n, kGemmPanelColumns);
  const int64_t threads = m * n * k < kSerialMultiplyAdds
                              ? 1
                              : std::min<int64_t>(at::get_num_threads(), m >= n ? row_blocks : panels);
  at::parallel_for(0, threads, 1, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> scratch;
    for (int64_t t = begin; t < end; ++t) {
      const GemmBlock block = ThreadBlock(m, n, t, threads);
      if (block.row_begin >= block.row_end || block.panel_begin >= block.panel_end) continue;
      scratch.resize(GemmScratchFloats(k, block.panel_end - block.panel_begin));
      kernel(a, b, n, k, bias, c, n, block, scratch.data());
    }
  });
}

MatrixView RowMajor(const torch::Tensor& t) { return {t.data_ptr<float>(), t.stride(0), t.stride(1)}; }

MatrixView Transposed(const torch::Tensor& t) { return {t.data_ptr<float>(), t.stride(1), t.stride(0)}; }

class DenseFunction : public torch::autograd::Function<DenseFunction> {
 public:
  // x [rows, in], weight [out, in], bias [out] or [0] for none (autograd functions take no
  // undefined inputs); all float32 and contiguous.
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias) {
    ctx->save_for_backward({x, weight});
    ctx->saved_data["has_bias"] = bias.numel() > 0;
    return MatMul(SelectedGemmKernel(), RowMajor(x), Transposed(weight), x.size(0), weight.size(0),
                  x.size(1), bias.numel() > 0 ? bias : torch::Tensor());
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grad_outputs) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const torch::Tensor& x = saved[0];
    const torch::Tensor& weight = saved[1];
    const torch::Tensor dy = grad_outputs[0].to(torch::kFloat).contiguous();
    const GemmBlockKernel kernel = SelectedGemmKernel();
    const int64_t rows = x.size(0), in = x.size(1), out = weight.size(0);
    torch::Tensor dx, dweight, dbias;
    if (ctx->needs_input_grad(0)) dx = MatMul(kernel, RowMajor(dy), RowMajor(weight), rows, in, out);
    if (ctx->needs_input_grad(1)) {
      // dW [out][in] = dyᵀ x; with more columns than rows its transpose splits better.
      dweight = out >= in ? MatMul(kernel, Transposed(dy), RowMajor(x), out, in, rows)
                          : MatMul(kernel, Transposed(x), RowMajor(dy), in, out, rows).t().contiguous();
    }
    if (ctx->saved_data["has_bias"].toBool() && ctx->needs_input_grad(2)) dbias = dy.sum(0);
    return {dx, dweight, dbias};
  }
};

bool RunsOnOurGemm(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  const auto is_cpu_float = [](const torch::Tensor& t) {
    return t.device().is_cpu() && t.scalar_type() == torch::kFloat;
  };
  return SelectedGemmKernel() != nullptr && !at::autocast::is_autocast_enabled(at::kCPU) && is_cpu_float(x) &&
         is_cpu_float(weight) && weight.dim() == 2 && x.dim() >= 1 && (!bias.defined() || is_cpu_float(bias));
}

}  // namespace

torch::Tensor MatMul(GemmBlockKernel kernel, MatrixView a, MatrixView b, int64_t m, int64_t n, int64_t k,
                     const torch::Tensor& bias) {
  torch::Tensor c = torch::empty({m, n}, torch::kFloat);
  if (m == 0 || n == 0) return c;
  if (k == 0) return bias.defined() ? c.copy_(bias.expand({m, n})) : c.zero_();
  const torch::Tensor bias_values = bias.defined() ? bias.contiguous() : bias;
  ParallelGemm(kernel, a, b, m, n, k, bias_values.defined() ? bias_values.data_ptr<float>() : nullptr,
               c.data_ptr<float>());
  return c;
}

torch::Tensor Dense(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  if (!RunsOnOurGemm(x, weight, bias)) return torch::nn::functional::linear(x, weight, bias);
  TORCH_CHECK(x.size(-1) == weight.size(1), "linear: input has ", x.size(-1), " features, the weight expects ",
              weight.size(1));
  TORCH_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0)), "linear: bias of shape ",
              bias.sizes(), " for ", weight.size(0), " outputs");
  const torch::Tensor rows = x.reshape({-1, x.size(-1)}).contiguous();
  torch::Tensor y =
      DenseFunction::apply(rows, weight.contiguous(), bias.defined() ? bias.contiguous() : torch::empty({0}));
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = weight.size(0);
  return y.view(shape);
}

}  // namespace roboloop::kernels
