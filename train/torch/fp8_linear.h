// FP8 training linears (issue 22, req 3): y = x Wᵀ + b with the forward GEMM and both backward
// GEMMs (dx = dy W, dW = dyᵀ x) on at::_scaled_mm. Weights and activations are quantized to
// float8_e4m3fn (3 mantissa bits, range ±448), gradients to float8_e5m2 (2 mantissa bits, range
// ±57344: gradients span more orders of magnitude than they need digits), each with a dynamic
// scale computed from the tensor's current absolute maximum: one per tensor (tensorwise) or one
// per row of each GEMM operand along the kept dimension (rowwise, CUDA only). The GEMMs
// accumulate in float32 and write bfloat16. Inside libroboloop_torch.so.
#pragma once

#include <optional>

#include <torch/torch.h>

#include "train/torch/precision.h"

namespace roboloop::train {

// While alive, the policies' FP8-eligible linears (the transformer blocks' q/k/v, output,
// and feed-forward projections) run through Fp8Linear with `scaling` on this thread;
// std::nullopt turns them off. Scopes nest and restore the previous setting on exit.
class Fp8LinearScope {
 public:
  explicit Fp8LinearScope(std::optional<Fp8Scaling> scaling);
  ~Fp8LinearScope();
  Fp8LinearScope(const Fp8LinearScope&) = delete;
  Fp8LinearScope& operator=(const Fp8LinearScope&) = delete;

 private:
  std::optional<Fp8Scaling> previous_;
};

// The innermost Fp8LinearScope's scaling on this thread; std::nullopt outside any.
std::optional<Fp8Scaling> ActiveFp8Scaling();

// x Wᵀ + b over the last dim of x [..., in], weight float32 [out, in], bias [out] or undefined;
// differentiable in x, weight and bias. Returns bfloat16. Throws c10::Error when the shapes do
// not fit, and for rowwise scaling off CUDA (naming the setting fp8_scaling); on CUDA,
// _scaled_mm needs `in` and `out` to be multiples of 16 (CheckPrecisionDevice checks the policy).
torch::Tensor Fp8Linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                        Fp8Scaling scaling);

}  // namespace roboloop::train
