// A float or int32 array in CUDA device memory, for torch-free callers of the CUDA kernels
// (tests and benchmarks); torch-side code uses CUDA tensors instead.
//
// Thread-safety: one buffer must not be used by two threads at once.
#pragma once

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"

namespace roboloop::kernels::cuda {

// Owns `bytes` of device memory on the current device; freed on destruction.
class DeviceBuffer {
 public:
  // Allocates `bytes` (0 is allowed) and copies `host` (when not null) into it. Returns
  // Internal naming the CUDA error when allocation or copy fails.
  static absl::StatusOr<std::unique_ptr<DeviceBuffer>> Create(size_t bytes,
                                                              const void* host = nullptr);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // The device address, typed.
  template <typename T>
  T* As() const {
    return static_cast<T*>(data_);
  }

  // Waits for all work on the device, then copies the whole buffer into `host`.
  absl::Status CopyToHost(void* host) const;

 private:
  DeviceBuffer(void* data, size_t bytes) : data_(data), bytes_(bytes) {}
  void* data_;
  size_t bytes_;
};

}  // namespace roboloop::kernels::cuda
