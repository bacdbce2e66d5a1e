// Small host tensors to the GPU without stalling the host: a pageable host-to-GPU copy waits for
// the GPU, so a plan (or a step's noise) copied that way at every call would stop the host from
// running ahead of the GPU.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

namespace roboloop::kernels {

// `values` as a 1-d `dtype` tensor on `device` that owns its memory (`values` may go away at
// once). To a CUDA device the copy is staged in pinned memory and queued on the current stream
// without blocking the host (LibTorch's pinned allocator keeps the staging buffer until the
// copy has run); to the CPU it is a plain converting copy.
torch::Tensor IndexTensorOn(const std::vector<int32_t>& values, torch::ScalarType dtype, const torch::Device& device);
// The same for 64-bit values.
torch::Tensor IndexTensorOn(const std::vector<int64_t>& values, torch::ScalarType dtype, const torch::Device& device);

// `t` on `device`: a CPU tensor going to a CUDA device is staged in pinned memory (unless it is
// pinned already) and its copy queued without blocking the host; a tensor already on `device` is
// returned as it is; any other move is a plain `to`.
torch::Tensor OnDeviceWithoutWaiting(const torch::Tensor& t, const torch::Device& device);

}  // namespace roboloop::kernels
