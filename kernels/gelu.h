// GELU for training and default-mode inference: the exact erf form (x Φ(x)) as one
// vectorised, multi-threaded pass forward and one backward, instead of LibTorch's CPU gelu
// (oneDNN), which took 13 % of a transformer policy's training step (issue 6, req 10a).
#pragma once

#include <torch/torch.h>

namespace roboloop::kernels {

// gelu(x) = x Φ(x) element-wise, differentiable (d/dx = Φ(x) + x φ(x)). float32 CPU tensors
// run the rowwise kernels' gelu (absolute error below 3e-7·|x| against erf); any other dtype
// or device falls back to torch::gelu. Each element's bits depend on its own value alone.
torch::Tensor Gelu(const torch::Tensor& x);

}  // namespace roboloop::kernels
