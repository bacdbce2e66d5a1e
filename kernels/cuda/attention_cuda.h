// Host entry points of the CUDA varlen attention (issue 5, req 6). Free of LibTorch, absl and
// CUDA headers, so torch-side code (varlen_attention_cuda.cc), the gtest suite and the
// standalone GPU check (tests/kernels/cuda_attention_check.cc, run by scripts/gpu-check.sh) all call
// it. The kernels run the per-tile algorithm of attention_tiles.h, one thread block per work
// item of EnumerateTiles and one thread per row, in fp32 on CUDA cores (no TF32).
//
// Inputs are trusted: varlen_attention.cc validates them once at the boundary. Every pointer in
// the arguments, including shape.cu_seqlens and shape.prefix_lengths, is a device pointer on
// the current CUDA device.
//
// Thread-safety: calls on distinct outputs may run concurrently, on any streams.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/attention_core.h"

namespace roboloop::kernels::cuda {

// Largest head_dim the CUDA kernels take; each size is compiled for a bound in
// {32, 64, 128, 256} so per-row accumulators stay in registers.
inline constexpr int kCudaMaxHeadDim = 256;

// Outcome of a call into the CUDA layer.
struct CudaOutcome {
  std::string error;  // what failed and why; empty on success
  bool ok() const { return error.empty(); }
};

// Number of CUDA devices this process can use: 0 when there is no device or no driver.
int UsableDeviceCount();

// The work items of one call: a device copy of EnumerateTiles(shape) for the same shape.
struct DeviceTiles {
  const TileItem* items = nullptr;  // device array
  int64_t count = 0;                // entries
};

// Enqueues the forward on `stream` (a cudaStream_t; nullptr is the legacy default stream):
// writes args.out and args.lse. Fails for head_dim above kCudaMaxHeadDim and when a launch
// fails (the error names the kernel and the CUDA error).
CudaOutcome CudaAttentionForward(const ForwardArgs& args, const DeviceTiles& tiles, void* stream);

// Enqueues the backward on `stream`: first row_dots[token, head] = sum(dout * out) into the
// device scratch `row_dots` ([total_tokens, heads] floats; args.row_dots is ignored), then dq
// over query tiles, then dk and dv over key tiles. `out` is the forward's output on the
// device, contiguous [total_tokens, heads, head_dim] like dout. Fails as the forward.
CudaOutcome CudaAttentionBackward(const BackwardArgs& args, const float* out, float* row_dots,
                                  int64_t total_tokens, const DeviceTiles& tiles, void* stream);

}  // namespace roboloop::kernels::cuda
