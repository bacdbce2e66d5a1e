#include "registry/manifest.h"

#include "absl/strings/str_cat.h"
#include "common/sha256.h"
#include "common/status.h"

namespace roboloop::registry {

absl::StatusOr<Manifest> ParseManifest(absl::string_view text) {
  Manifest manifest;
  try {
    manifest.json = nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& error) {
    return absl::InvalidArgumentError(absl::StrCat("manifest is not valid JSON: ", error.what()));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(CheckpointManifest typed, CheckpointManifest::FromJson(manifest.json));
  try {
    manifest.canonical = manifest.json.dump();
  } catch (const nlohmann::json::exception& error) {
    return absl::InvalidArgumentError(absl::StrCat("manifest cannot be serialized: ", error.what()));
  }
  manifest.id = Sha256Hex(manifest.canonical);
  manifest.model = typed.model;
  manifest.dataset_id = typed.dataset_id;
  manifest.parent_id = typed.parent_id;
  manifest.step = typed.step;
  manifest.metrics_json = typed.metrics.dump();
  for (const auto& [role, digest] : typed.blobs) {
    v1::BlobRef& ref = manifest.blobs.emplace_back();
    ref.set_role(role);
    ref.set_sha256(digest.sha256);
    ref.set_size(digest.size);
  }
  return manifest;
}

}  // namespace roboloop::registry
