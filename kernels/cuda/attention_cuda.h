// Host entry points of the CUDA varlen attention (issue 5, req 6). Torch-free and free of CUDA
// headers, so torch-side code (varlen_attention_cuda.cc) and torch-free tests call it alike.
// The kernels run the per-tile algorithm of attention_tiles.h, one thread block per work item
// of EnumerateTiles and one thread per row, in fp32 on CUDA cores (no TF32).
//
// Inputs are trusted: varlen_attention.cc validates them once at the boundary. Every pointer in
// the arguments, including shape.cu_seqlens and shape.prefix_lengths, is a device pointer on
// the current CUDA device; head_dim must be at most kCudaMaxHeadDim.
//
// Thread-safety: calls on distinct outputs may run concurrently, on any streams.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/attention_core.h"

namespace roboloop::kernels::cuda {

// Largest head_dim the CUDA kernels take; each size is compiled for a bound in
// {32, 64, 128, 256} so per-row accumulators stay in registers.
inline constexpr int kCudaMaxHeadDim = 256;

// Number of CUDA devices this process can use: 0 when there is no device or no driver.
int UsableDeviceCount();

// The work items of one call: a device copy of EnumerateTiles(shape) for the same shape.
struct DeviceTiles {
  const TileItem* items = nullptr;  // device array
  int64_t count = 0;                // entries
};

// Enqueues the forward on `stream` (a cudaStream_t; nullptr is the legacy default stream):
// writes args.out and args.lse. Returns InvalidArgument for an unsupported head_dim and
// Internal naming the CUDA error when a launch fails.
absl::Status CudaAttentionForward(const ForwardArgs& args, const DeviceTiles& tiles,
                                  void* stream);

// Enqueues the backward on `stream`: first row_dots[token, head] = sum(dout * out) into the
// device scratch `row_dots` ([total_tokens, heads] floats; args.row_dots is ignored), then dq
// over query tiles, then dk and dv over key tiles. `out` is the forward's output on the
// device, contiguous [total_tokens, heads, head_dim] like dout. Errors as for the forward.
absl::Status CudaAttentionBackward(const BackwardArgs& args, const float* out, float* row_dots,
                                   int64_t total_tokens, const DeviceTiles& tiles,
                                   void* stream);

}  // namespace roboloop::kernels::cuda
