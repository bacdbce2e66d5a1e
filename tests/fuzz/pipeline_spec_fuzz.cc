// Fuzz target: pipeline specs (pipeline/spec.h). The bytes are the pipeline file; it is loaded
// and validated against the built-in stage kinds and the repository's named protocols.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "pipeline/spec.h"
#include "pipeline/stage_kinds/builtin.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = roboloop::fuzz::WriteScratchFile("pipeline.yaml", data, size);
  const absl::StatusOr<roboloop::pipeline::LoadedPipeline> loaded = roboloop::pipeline::LoadPipeline(path, {});
  if (!loaded.ok()) return 0;
  roboloop::pipeline::TaskFiles(*loaded);
  roboloop::pipeline::ValidationOptions options;
  options.protocols_dir = ROBOLOOP_SOURCE_DIR "/configs/protocols";
  const absl::StatusOr<roboloop::pipeline::Plan> plan =
      roboloop::pipeline::ValidatePipeline(*loaded, roboloop::pipeline::BuiltinStageKinds(), options);
  if (!plan.ok() && !absl::IsInvalidArgument(plan.status())) std::abort();
  return 0;
}
