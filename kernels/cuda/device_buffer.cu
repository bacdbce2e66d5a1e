// DeviceBuffer over the CUDA runtime.
#include "kernels/cuda/device_buffer.h"

#include <cuda_runtime.h>

#include "absl/strings/str_cat.h"

namespace roboloop::kernels::cuda {
namespace {

absl::Status CudaError(const char* step, cudaError_t error) {
  return absl::InternalError(absl::StrCat("cuda ", step, ": ", cudaGetErrorString(error)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceBuffer>> DeviceBuffer::Create(size_t bytes,
                                                                   const void* host) {
  void* data = nullptr;
  if (cudaError_t error = cudaMalloc(&data, bytes > 0 ? bytes : 1); error != cudaSuccess) {
    return CudaError("malloc", error);
  }
  std::unique_ptr<DeviceBuffer> buffer(new DeviceBuffer(data, bytes));
  if (host != nullptr) {
    if (cudaError_t error = cudaMemcpy(data, host, bytes, cudaMemcpyHostToDevice);
        error != cudaSuccess) {
      return CudaError("copy to device", error);
    }
  }
  return buffer;
}

DeviceBuffer::~DeviceBuffer() { cudaFree(data_); }

absl::Status DeviceBuffer::CopyToHost(void* host) const {
  if (cudaError_t error = cudaDeviceSynchronize(); error != cudaSuccess) {
    return CudaError("synchronize", error);
  }
  if (cudaError_t error = cudaMemcpy(host, data_, bytes_, cudaMemcpyDeviceToHost);
      error != cudaSuccess) {
    return CudaError("copy to host", error);
  }
  return absl::OkStatus();
}

}  // namespace roboloop::kernels::cuda
