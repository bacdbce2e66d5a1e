// The training linears on our own GEMM (kernels/gemm_core.h): y = x Wᵀ + b forward, and
// dx = dy W, dW = dyᵀ x, db = Σ dy backward, each GEMM split over LibTorch's intra-op threads.
#pragma once

#include <torch/torch.h>

#include "kernels/gemm_core.h"

namespace roboloop::kernels {

// C[m][n] = A[m][k] B[k][n] (+ bias[n] when `bias` is defined) as a new contiguous float tensor,
// computed by `kernel` on the intra-op threads. Its bits do not depend on the thread count.
torch::Tensor MatMul(GemmBlockKernel kernel, MatrixView a, MatrixView b, int64_t m, int64_t n,
                     int64_t k, const torch::Tensor& bias = {});

// x Wᵀ + b over the last dim of x [..., in] with weight [out, in] and bias [out] (or
// undefined), differentiable. float32 CPU tensors outside autocast run SelectedGemmKernel()
// where there is one; anything else runs torch::nn::functional::linear.
torch::Tensor Dense(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);

}  // namespace roboloop::kernels
