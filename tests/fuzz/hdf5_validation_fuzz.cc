// Fuzz target: dataset validation (data/validation.h). The bytes are an HDF5 file, written to a
// scratch file and validated strictly with a value scan; a valid file's layout must agree with
// itself (total steps = the sum of its demos' steps).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "data/validation.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = roboloop::fuzz::WriteScratchFile("dataset.hdf5", data, size);
  const absl::StatusOr<roboloop::data::ValidationResult> result =
      roboloop::data::ValidateFile(path, roboloop::data::ValidationOptions{});
  if (!result.ok()) return 0;
  int64_t steps = 0;
  for (const roboloop::data::DemoLayout& demo : result->layout.demos) {
    if (demo.num_samples < 0) std::abort();
    steps += demo.num_samples;
  }
  if (steps != result->layout.total_steps) std::abort();
  return 0;
}
