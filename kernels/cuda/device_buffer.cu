// DeviceBuffer over the CUDA runtime.
#include "kernels/cuda/device_buffer.h"

#include <cuda_runtime.h>

namespace roboloop::kernels::cuda {
namespace {

std::string CudaError(const char* step, cudaError_t error) {
  return std::string("cuda ") + step + ": " + cudaGetErrorString(error);
}

}  // namespace

std::unique_ptr<DeviceBuffer> DeviceBuffer::Create(size_t bytes, const void* host,
                                                   std::string* error) {
  void* data = nullptr;
  if (cudaError_t status = cudaMalloc(&data, bytes > 0 ? bytes : 1); status != cudaSuccess) {
    *error = CudaError("malloc", status);
    return nullptr;
  }
  std::unique_ptr<DeviceBuffer> buffer(new DeviceBuffer(data, bytes));
  if (host != nullptr && bytes > 0) {
    if (cudaError_t status = cudaMemcpy(data, host, bytes, cudaMemcpyHostToDevice);
        status != cudaSuccess) {
      *error = CudaError("copy to device", status);
      return nullptr;
    }
  }
  return buffer;
}

DeviceBuffer::~DeviceBuffer() { cudaFree(data_); }

CudaOutcome DeviceBuffer::CopyToHost(void* host) const {
  if (cudaError_t status = cudaDeviceSynchronize(); status != cudaSuccess) {
    return {CudaError("synchronize", status)};
  }
  if (bytes_ == 0) return {};
  if (cudaError_t status = cudaMemcpy(host, data_, bytes_, cudaMemcpyDeviceToHost);
      status != cudaSuccess) {
    return {CudaError("copy to host", status)};
  }
  return {};
}

}  // namespace roboloop::kernels::cuda
