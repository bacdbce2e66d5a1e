// Fuzz target: checkpoint manifests as the registry receives them (registry/manifest.h over
// registry/checkpoint_manifest.h). A manifest that parses must write back (ToJson) into one that
// parses again to the same canonical form, and its policy options must complete or be refused.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "registry/checkpoint_manifest.h"
#include "registry/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<roboloop::registry::Manifest> manifest = roboloop::registry::ParseManifest(text);
  if (!manifest.ok()) {
    if (!absl::IsInvalidArgument(manifest.status())) std::abort();
    return 0;
  }
  const absl::StatusOr<roboloop::registry::CheckpointManifest> typed =
      roboloop::registry::CheckpointManifest::Parse(manifest->canonical);
  if (!typed.ok()) std::abort();  // the canonical form of a valid manifest is valid
  const absl::StatusOr<roboloop::registry::CheckpointManifest> again =
      roboloop::registry::CheckpointManifest::FromJson(typed->ToJson());
  if (!again.ok() || again->ToJson() != typed->ToJson()) std::abort();
  const absl::StatusOr<nlohmann::json> options = typed->CompleteOptions();
  if (!options.ok() && !absl::IsInvalidArgument(options.status())) std::abort();
  return 0;
}
