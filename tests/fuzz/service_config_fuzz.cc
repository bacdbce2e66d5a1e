// Fuzz target: services files (wiring/services.h, proto/roboloop/v1/services.proto as YAML).
// A file that loads names an address for every service and at least one sim.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "tests/fuzz/fuzz_support.h"
#include "wiring/services.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = roboloop::fuzz::WriteScratchFile("services.yaml", data, size);
  const absl::StatusOr<roboloop::wiring::ServiceTargets> targets = roboloop::wiring::LoadServicesFile(path);
  if (!targets.ok()) {
    if (!absl::IsInvalidArgument(targets.status())) std::abort();
    return 0;
  }
  if (targets->registry.target.empty() || targets->train.target.empty() || targets->eval.target.empty() ||
      targets->sims.empty()) {
    std::abort();
  }
  return 0;
}
