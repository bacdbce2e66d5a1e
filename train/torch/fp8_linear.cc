// The FP8 linear: dynamic scaling, the scaled GEMMs and their autograd function.
#include "train/torch/fp8_linear.h"

#include <ATen/ops/_scaled_mm.h>

#include <vector>

namespace roboloop::train {
namespace {

thread_local std::optional<Fp8Scaling> active_scaling;

constexpr double kE4m3Max = 448.0;    // largest finite float8_e4m3fn
constexpr double kE5m2Max = 57344.0;  // largest finite float8_e5m2
constexpr int64_t kScaledMmAlignment = 16;  // _scaled_mm's K and N on CUDA

// A 2-D tensor in FP8 and the float32 scale that turns it back: values * scale ≈ source.
struct Quantized {
  torch::Tensor values;  // [rows, columns], row-major
  torch::Tensor scale;   // 0-d (tensorwise) or [rows, 1] (rowwise)
};

// Quantizes `x` [rows, columns] to `type` with a scale from its absolute maximum (of the whole
// tensor, or of each row), so the largest magnitude lands on the format's largest value.
Quantized Quantize(const torch::Tensor& x, torch::ScalarType type, bool rowwise) {
  const double largest = type == torch::kFloat8_e4m3fn ? kE4m3Max : kE5m2Max;
  const torch::Tensor magnitude = x.abs().to(torch::kFloat);
  const torch::Tensor amax = rowwise ? magnitude.amax({1}, /*keepdim=*/true) : magnitude.max();
  const torch::Tensor scale = amax.clamp_min(1e-12) / largest;
  return {(x.to(torch::kFloat) / scale).clamp(-largest, largest).to(type).contiguous(), scale.contiguous()};
}

// A Bᵀ where `b_transposed` holds Bᵀ row-major, i.e. B column-major as _scaled_mm wants it.
// Rowwise scales of B run along its columns: [1, n].
torch::Tensor ScaledGemm(const Quantized& a, const Quantized& b_transposed, bool rowwise) {
  const torch::Tensor scale_b = rowwise ? b_transposed.scale.view({1, -1}) : b_transposed.scale;
  return at::_scaled_mm(a.values, b_transposed.values.t(), a.scale, scale_b, std::nullopt, std::nullopt,
                        torch::kBFloat16);
}

// `x` [rows, ...] with zero rows appended up to a multiple of _scaled_mm's alignment (the
// contracted dimension of the weight-gradient GEMM is the rows; zeros add nothing to it).
torch::Tensor PadRows(const torch::Tensor& x) {
  const int64_t padding = (kScaledMmAlignment - x.size(0) % kScaledMmAlignment) % kScaledMmAlignment;
  if (padding == 0) return x;
  return torch::cat({x, torch::zeros({padding, x.size(1)}, x.options())}, 0);
}

class Fp8MatMul : public torch::autograd::Function<Fp8MatMul> {
 public:
  // x [rows, in] (any float type), weight float32 [out, in] -> bfloat16 [rows, out].
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, bool rowwise) {
    ctx->save_for_backward({x, weight});
    ctx->saved_data["rowwise"] = rowwise;
    return ScaledGemm(Quantize(x, torch::kFloat8_e4m3fn, rowwise), Quantize(weight, torch::kFloat8_e4m3fn, rowwise),
                      rowwise);
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grad_outputs) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const torch::Tensor& x = saved[0];
    const torch::Tensor& weight = saved[1];
    const bool rowwise = ctx->saved_data["rowwise"].toBool();
    const torch::Tensor dy = grad_outputs[0].contiguous();
    torch::Tensor dx, dweight;
    // One scale per tensor needs e5m2's range for gradients; per-row scales cover that range,
    // and the rowwise kernels (CUTLASS, and cuBLASLt's outer-vector scaling on sm90) are the
    // e4m3 x e4m3 ones. The gradient stays _scaled_mm's first operand either way.
    const torch::ScalarType gradient_type = rowwise ? torch::kFloat8_e4m3fn : torch::kFloat8_e5m2;
    if (ctx->needs_input_grad(0)) {
      dx = ScaledGemm(Quantize(dy, gradient_type, rowwise),
                      Quantize(weight.t().contiguous(), torch::kFloat8_e4m3fn, rowwise), rowwise)
               .to(x.scalar_type());
    }
    if (ctx->needs_input_grad(1)) {
      dweight = ScaledGemm(Quantize(PadRows(dy).t().contiguous(), gradient_type, rowwise),
                           Quantize(PadRows(x).t().contiguous(), torch::kFloat8_e4m3fn, rowwise), rowwise)
                    .to(weight.scalar_type());
    }
    return {dx, dweight, torch::Tensor()};
  }
};

}  // namespace

Fp8LinearScope::Fp8LinearScope(std::optional<Fp8Scaling> scaling) : previous_(active_scaling) {
  active_scaling = scaling;
}

Fp8LinearScope::~Fp8LinearScope() { active_scaling = previous_; }

std::optional<Fp8Scaling> ActiveFp8Scaling() { return active_scaling; }

torch::Tensor Fp8Linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                        Fp8Scaling scaling) {
  TORCH_CHECK(weight.dim() == 2 && x.dim() >= 1 && x.size(-1) == weight.size(1), "fp8 linear: input of shape ",
              x.sizes(), " for a weight of shape ", weight.sizes());
  const bool rowwise = scaling == Fp8Scaling::kRowwise;
  TORCH_CHECK(!rowwise || x.is_cuda(), "trainer option fp8_scaling: rowwise scales run on CUDA only (",
              "LibTorch's _scaled_mm on the ", x.device(), " takes tensorwise scales); use fp8_scaling: tensorwise");
  const torch::Tensor rows = x.reshape({-1, x.size(-1)});
  torch::Tensor y = Fp8MatMul::apply(rows, weight, rowwise);
  if (bias.defined()) y = y + bias.to(y.scalar_type());
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = weight.size(0);
  return y.view(shape);
}

}  // namespace roboloop::train
