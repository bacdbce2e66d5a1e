// The varlen attention ops' CUDA path (issue 5, req 6): runs checked, prepared inputs held in
// CUDA tensors through the kernels of attention_cuda.h on LibTorch's current stream. Compiled
// only when LibTorch has CUDA (kernels/CMakeLists.txt); varlen_attention.cc calls it for CUDA
// tensors and keeps every input check.
//
// Thread-safety: as the kernels: calls on distinct outputs may run concurrently.
#pragma once

#include <torch/torch.h>

#include "kernels/attention_core.h"

namespace roboloop::kernels::cuda {

// Enqueues the forward on `device`: args' tensor pointers are memory of that device, and
// args.shape's cu_seqlens and prefix_lengths are host memory (copied to the device here).
// Throws c10::Error naming the failure.
void ForwardOnDevice(const ForwardArgs& args, const torch::Device& device);

// Enqueues the backward likewise: `out` is the forward's output and `row_dots` a scratch of
// [total_tokens, heads] floats, both on the device; args.row_dots is ignored.
void BackwardOnDevice(const BackwardArgs& args, const float* out, float* row_dots,
                      int64_t total_tokens, const torch::Device& device);

}  // namespace roboloop::kernels::cuda
