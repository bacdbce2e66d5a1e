// CUDA kernels of the varlen attention: thin __global__ wrappers that run the tile schedules
// of attention_tiles.h with one thread per row, and their launchers.
#include "kernels/cuda/attention_cuda.h"

#include <cuda_runtime.h>

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

CudaOutcome LaunchOutcome(const char* kernel) {
  cudaError_t error = cudaGetLastError();
  if (error == cudaSuccess) return {};
  return {std::string("cuda attention: launching ") + kernel +
          " failed: " + cudaGetErrorString(error)};
}

// Launches `kernel` over every tile with `shared_floats` of dynamic shared memory, opting in
// to more than the default 48 KiB when needed.
template <typename Args>
CudaOutcome LaunchTiles(void (*kernel)(Args, const TileItem*), const char* name,
                        const Args& args, const DeviceTiles& tiles, int64_t shared_floats,
                        void* stream) {
  if (tiles.count == 0) return {};
  const size_t bytes = static_cast<size_t>(shared_floats) * sizeof(float);
  if (cudaError_t error = cudaFuncSetAttribute(
          kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
      error != cudaSuccess) {
    return {std::string("cuda attention: ") + name + " needs " + std::to_string(bytes) +
            " bytes of shared memory: " + cudaGetErrorString(error)};
  }
  kernel<<<static_cast<unsigned>(tiles.count), kRowTile, bytes,
           static_cast<cudaStream_t>(stream)>>>(args, tiles.items);
  return LaunchOutcome(name);
}

CudaOutcome UnsupportedHeadDim(int64_t head_dim) {
  return {"cuda attention: head_dim " + std::to_string(head_dim) +
          " is above the CUDA kernels' limit of " + std::to_string(kCudaMaxHeadDim)};
}

}  // namespace

int UsableDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the "no driver" error so later calls do not report it
    return 0;
  }
  return count;
}

CudaOutcome CudaAttentionForward(const ForwardArgs& args, const DeviceTiles& tiles,
                                 void* stream) {
  const int64_t d = args.shape.head_dim;
  if (d > kCudaMaxHeadDim) return UnsupportedHeadDim(d);
  return WithHeadDimBound(d, [&](auto bound) {
    constexpr int kBound = decltype(bound)::value;
    return LaunchTiles(ForwardKernel<kBound>, "forward", args, tiles,
                       ForwardTile<kBound>::SharedFloats(d), stream);
  });
}

CudaOutcome CudaAttentionBackward(const BackwardArgs& args, const float* out, float* row_dots,
                                  int64_t total_tokens, const DeviceTiles& tiles,
                                  void* stream) {
  const int64_t d = args.shape.head_dim;
  if (d > kCudaMaxHeadDim) return UnsupportedHeadDim(d);
  const int64_t rows = total_tokens * args.shape.heads;
  if (rows > 0) {
    constexpr int kThreads = 256;
    RowDotsKernel<<<static_cast<unsigned>((rows + kThreads - 1) / kThreads), kThreads, 0,
                    static_cast<cudaStream_t>(stream)>>>(args.dout, out, d, rows, row_dots);
    if (CudaOutcome launched = LaunchOutcome("row dots"); !launched.ok()) return launched;
  }
  BackwardArgs with_dots = args;
  with_dots.row_dots = row_dots;
  return WithHeadDimBound(d, [&](auto bound) {
    constexpr int kBound = decltype(bound)::value;
    CudaOutcome queries = LaunchTiles(QueryGradKernel<kBound>, "query gradients", with_dots,
                                      tiles, QueryGradTile<kBound>::SharedFloats(d), stream);
    if (!queries.ok()) return queries;
    return LaunchTiles(KeyGradKernel<kBound>, "key gradients", with_dots, tiles,
                       KeyGradTile<kBound>::SharedFloats(d), stream);
  });
}

}  // namespace roboloop::kernels::cuda
