// Layer norm for training and default-mode inference: one vectorised pass forward (which
// keeps each row's mean and rstd) and one backward that yields dx, dgamma and dbeta together,
// instead of LibTorch's CPU layer norm (about 1 ms forward and 0.4 ms backward per call on a
// transformer policy's [6144, 128] activations; issue 6, req 10a).
#pragma once

#include <torch/torch.h>

namespace roboloop::kernels {

// Layer norm over the last dim of x [..., n], differentiable in x, weight and bias; weight
// and bias are [n] or undefined. float32 CPU inputs run the rowwise kernels; any other dtype
// or device falls back to torch::layer_norm. The weight and bias gradients are summed over
// fixed blocks of rows in a fixed order, so their bits do not depend on the thread count.
torch::Tensor DifferentiableLayerNorm(const torch::Tensor& x, const torch::Tensor& weight,
                                      const torch::Tensor& bias, double eps = 1e-5);

}  // namespace roboloop::kernels
