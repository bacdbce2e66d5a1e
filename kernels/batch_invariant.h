// Batch-invariant inference ops and the switch that selects them (issue 5, req 4).
//
// BLAS-backed matmul and vectorised reductions can round a row differently depending on the
// batch it is in. With the mode on, these ops compute every output row from its input row
// alone, with a reduction order fixed by the row length, so a policy's action for one
// environment is bitwise identical however environments are batched, ordered or sharded.
// With the mode off they call the default LibTorch ops (gelu and layer norm: the
// differentiable kernels of kernels/gelu.h and kernels/layer_norm.h). Policy code calls these functions
// instead of torch::nn::functional; evaluation turns the mode on with a BatchInvariantScope.
//
// The mode is per thread. Invariant-mode ops are inference-only: they take float32 CPU
// tensors, do not record autograd history, and throw c10::Error (caught at the module edge)
// naming the input on bad input, like the LibTorch ops they replace.
#pragma once

#include <torch/torch.h>

namespace roboloop::kernels {

// True while a BatchInvariantScope(true) is the innermost scope on this thread.
bool BatchInvariantModeEnabled();

// Sets the calling thread's mode for its lifetime and restores the previous one on exit.
// Not copyable; scopes nest.
class BatchInvariantScope {
 public:
  explicit BatchInvariantScope(bool enabled = true);
  ~BatchInvariantScope();
  BatchInvariantScope(const BatchInvariantScope&) = delete;
  BatchInvariantScope& operator=(const BatchInvariantScope&) = delete;

 private:
  bool previous_;
};

// y = x . weight^T + bias over the last dim of x [..., in]; weight [out, in]; bias [out] or
// undefined.
torch::Tensor Linear(const torch::Tensor& x, const torch::Tensor& weight,
                     const torch::Tensor& bias);

// Layer norm over the last dim of x [..., n]; weight and bias are [n] or undefined.
torch::Tensor LayerNorm(const torch::Tensor& x, const torch::Tensor& weight,
                        const torch::Tensor& bias, double eps = 1e-5);

// Softmax over the last dim of x.
torch::Tensor Softmax(const torch::Tensor& x);

// Element-wise activations the policies use.
enum class Activation { kRelu, kGelu, kSilu, kTanh };

// Applies `activation` element-wise (gelu is the erf form x Φ(x), kernels/gelu.h).
torch::Tensor Activate(Activation activation, const torch::Tensor& x);

}  // namespace roboloop::kernels
