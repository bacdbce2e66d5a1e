// Torch-free access to the on-demand LibTorch library. Including this header never pulls in
// LibTorch; calling TorchRuntime::Load() maps it into the process (once).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "train/torch_api.h"

namespace roboloop::train {

// Handle to the loaded libroboloop_torch.so. Thread-safe: Load() may be called concurrently
// and returns the same instance; the instance is immutable and lives until process exit.
class TorchRuntime {
 public:
  // Loads the library on first call: from $ROBOLOOP_TORCH_LIBRARY when set (only there),
  // else next to the executable, else in ../lib relative to the executable's folder. Fails with
  // NOT_FOUND naming every path tried, or FAILED_PRECONDITION on an ABI version mismatch.
  static absl::StatusOr<const TorchRuntime*> Load();

  // Path of the library that was loaded.
  const std::string& path() const { return path_; }

  // JSON object with LibTorch's version, intra/inter-op threads, parallel backend, BLAS
  // configuration and CUDA availability.
  std::string DescribeRuntime() const;

 private:
  TorchRuntime(std::string path, const RoboloopTorchApi* api) : path_(std::move(path)), api_(api) {}

  std::string path_;
  const RoboloopTorchApi* api_;
};

}  // namespace roboloop::train
