// Fuzz target: safetensors files (train/safetensors.h), the `policy` blob of a checkpoint. Any
// bytes are read into tensors whose values match their shapes, or refused with an error.
#include <cstdint>
#include <cstdlib>

#include "tests/fuzz/fuzz_support.h"
#include "train/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = roboloop::fuzz::WriteScratchFile("policy.safetensors", data, size);
  const absl::StatusOr<roboloop::train::TensorMap> tensors = roboloop::train::ReadSafetensors(path);
  if (!tensors.ok()) return 0;
  for (const auto& [name, tensor] : *tensors) {
    size_t elements = 1;
    for (int64_t dim : tensor.shape) {
      if (dim < 0) std::abort();
      elements *= static_cast<size_t>(dim);
    }
    if (elements != tensor.values.size()) std::abort();
  }
  return 0;
}
