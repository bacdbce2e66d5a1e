// GroupNorm followed by ReLU, with an optional residual added before the ReLU, as one autograd
// op: relu(group_norm(x) + residual). The image encoder (image_encoder.h) runs its convolutions
// on channels-last activations, where LibTorch's CPU convolutions are about twice as fast as on
// channels-first ones but its CPU GroupNorm backward is about seven times slower; this op takes
// channels-last float32 CPU tensors in two passes over the activations each way. Other inputs
// (CUDA, other dtypes or layouts) go through LibTorch's group_norm and relu. Each sample is
// computed on its own, so results do not depend on the batch. Inside libroboloop_torch.so only.
#pragma once

#include <cstdint>

#include <torch/torch.h>

namespace roboloop::train {

// relu(group_norm(x, groups, weight, bias, eps 1e-5) + residual) for x [batch, channels, height,
// width]; `residual` undefined for none, else of x's shape. Differentiable in x, weight, bias and
// residual. Throws c10::Error when channels do not divide by groups or the shapes disagree.
torch::Tensor GroupNormRelu(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                            int64_t groups, const torch::Tensor& residual = torch::Tensor());

}  // namespace roboloop::train
