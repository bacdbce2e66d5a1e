// A byte array in CUDA device memory, for torch-free callers of the CUDA kernels (the
// standalone GPU check); torch-side code uses CUDA tensors instead.
//
// Thread-safety: one buffer must not be used by two threads at once.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "kernels/cuda/attention_cuda.h"

namespace roboloop::kernels::cuda {

// Owns `bytes` of device memory on the current device; freed on destruction.
class DeviceBuffer {
 public:
  // Allocates `bytes` (0 is allowed) and copies `host` (when not null) into it. On failure
  // returns null and sets *error to the failed step and the CUDA error.
  static std::unique_ptr<DeviceBuffer> Create(size_t bytes, const void* host,
                                              std::string* error);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // The device address, typed.
  template <typename T>
  T* As() const {
    return static_cast<T*>(data_);
  }

  // Waits for all work on the device, then copies the whole buffer into `host`.
  CudaOutcome CopyToHost(void* host) const;

 private:
  DeviceBuffer(void* data, size_t bytes) : data_(data), bytes_(bytes) {}
  void* data_;
  size_t bytes_;
};

}  // namespace roboloop::kernels::cuda
