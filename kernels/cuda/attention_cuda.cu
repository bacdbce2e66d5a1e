// CUDA kernels of the varlen attention: thin __global__ wrappers that run the tile schedules
// of attention_tiles.h with one thread per row, and their launchers.
#include "kernels/cuda/attention_cuda.h"

#include <cuda_runtime.h>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/attention_tiles.h"

namespace roboloop::kernels::cuda {
namespace {

// The block-wide barrier of the GPU schedules.
struct BlockBarrier {
  __host__ __device__ void operator()() const {
#ifdef __CUDA_ARCH__
    __syncthreads();
#endif
  }
};

__device__ ThreadSpan OwnThread() {
  const int t = static_cast<int>(threadIdx.x);
  return ThreadSpan{t, t + 1};
}

template <int kMaxHeadDim>
__global__ void __launch_bounds__(kRowTile) ForwardKernel(ForwardArgs args,
                                                          const TileItem* items) {
  extern __shared__ float shared[];
  ForwardRow<kMaxHeadDim> row;
  RunQueryTile(ForwardTile<kMaxHeadDim>(args, items[blockIdx.x]), shared, OwnThread(), &row,
               BlockBarrier{});
}

template <int kMaxHeadDim>
__global__ void __launch_bounds__(kRowTile) QueryGradKernel(BackwardArgs args,
                                                            const TileItem* items) {
  extern __shared__ float shared[];
  GradRow<kMaxHeadDim> row;
  RunQueryTile(QueryGradTile<kMaxHeadDim>(args, items[blockIdx.x]), shared, OwnThread(), &row,
               BlockBarrier{});
}

template <int kMaxHeadDim>
__global__ void __launch_bounds__(kRowTile) KeyGradKernel(BackwardArgs args,
                                                          const TileItem* items) {
  extern __shared__ float shared[];
  GradRow<kMaxHeadDim> row;
  RunKeyTile(KeyGradTile<kMaxHeadDim>(args, items[blockIdx.x]), shared, OwnThread(), &row,
             BlockBarrier{});
}

// row_dots[r] = sum_c dout[r, c] * out[r, c] over rows r = (token, head), one thread a row.
__global__ void RowDotsKernel(const float* dout, const float* out, int64_t head_dim,
                              int64_t rows, float* row_dots) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r < rows) row_dots[r] = RowDot(dout + r * head_dim, out + r * head_dim, head_dim);
}

absl::Status LaunchStatus(const char* kernel) {
  cudaError_t error = cudaGetLastError();
  if (error == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("cuda attention: launching ", kernel, " failed: ",
                                          cudaGetErrorString(error)));
}

// Launches `kernel` over every tile with `shared_floats` of dynamic shared memory, opting in
// to more than the default 48 KiB when needed.
template <typename Args>
absl::Status LaunchTiles(void (*kernel)(Args, const TileItem*), const char* name,
                         const Args& args, const DeviceTiles& tiles, int64_t shared_floats,
                         void* stream) {
  if (tiles.count == 0) return absl::OkStatus();
  const size_t bytes = static_cast<size_t>(shared_floats) * sizeof(float);
  if (cudaError_t error = cudaFuncSetAttribute(
          kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
      error != cudaSuccess) {
    return absl::InternalError(absl::StrCat("cuda attention: ", name, " needs ", bytes,
                                            " bytes of shared memory: ",
                                            cudaGetErrorString(error)));
  }
  kernel<<<static_cast<unsigned>(tiles.count), kRowTile, bytes,
           static_cast<cudaStream_t>(stream)>>>(args, tiles.items);
  return LaunchStatus(name);
}

template <int kMaxHeadDim>
absl::Status ForwardFor(const ForwardArgs& args, const DeviceTiles& tiles, void* stream) {
  return LaunchTiles(ForwardKernel<kMaxHeadDim>, "forward", args, tiles,
                     ForwardTile<kMaxHeadDim>::SharedFloats(args.shape.head_dim), stream);
}

template <int kMaxHeadDim>
absl::Status BackwardFor(const BackwardArgs& args, const DeviceTiles& tiles, void* stream) {
  const int64_t d = args.shape.head_dim;
  absl::Status status =
      LaunchTiles(QueryGradKernel<kMaxHeadDim>, "query gradients", args, tiles,
                  QueryGradTile<kMaxHeadDim>::SharedFloats(d), stream);
  if (!status.ok()) return status;
  return LaunchTiles(KeyGradKernel<kMaxHeadDim>, "key gradients", args, tiles,
                     KeyGradTile<kMaxHeadDim>::SharedFloats(d), stream);
}

absl::Status UnsupportedHeadDim(int64_t head_dim) {
  return absl::InvalidArgumentError(absl::StrCat("cuda attention: head_dim ", head_dim,
                                                 " is above the CUDA kernels' limit of ",
                                                 kCudaMaxHeadDim));
}

}  // namespace

int UsableDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return count;
}

absl::Status CudaAttentionForward(const ForwardArgs& args, const DeviceTiles& tiles,
                                  void* stream) {
  const int64_t d = args.shape.head_dim;
  if (d <= 32) return ForwardFor<32>(args, tiles, stream);
  if (d <= 64) return ForwardFor<64>(args, tiles, stream);
  if (d <= 128) return ForwardFor<128>(args, tiles, stream);
  if (d <= kCudaMaxHeadDim) return ForwardFor<kCudaMaxHeadDim>(args, tiles, stream);
  return UnsupportedHeadDim(d);
}

absl::Status CudaAttentionBackward(const BackwardArgs& args, const float* out, float* row_dots,
                                   int64_t total_tokens, const DeviceTiles& tiles,
                                   void* stream) {
  const int64_t d = args.shape.head_dim;
  if (d > kCudaMaxHeadDim) return UnsupportedHeadDim(d);
  const int64_t rows = total_tokens * args.shape.heads;
  if (rows > 0) {
    constexpr int kThreads = 256;
    RowDotsKernel<<<static_cast<unsigned>((rows + kThreads - 1) / kThreads), kThreads, 0,
                    static_cast<cudaStream_t>(stream)>>>(args.dout, out, d, rows, row_dots);
    absl::Status status = LaunchStatus("row dots");
    if (!status.ok()) return status;
  }
  BackwardArgs with_dots = args;
  with_dots.row_dots = row_dots;
  if (d <= 32) return BackwardFor<32>(with_dots, tiles, stream);
  if (d <= 64) return BackwardFor<64>(with_dots, tiles, stream);
  if (d <= 128) return BackwardFor<128>(with_dots, tiles, stream);
  return BackwardFor<kCudaMaxHeadDim>(with_dots, tiles, stream);
}

}  // namespace roboloop::kernels::cuda
