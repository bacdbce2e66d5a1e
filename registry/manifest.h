// A checkpoint manifest as the registry stores it (docs/architecture.md §2): validated through
// CheckpointManifest (registry/checkpoint_manifest.h, which documents the schema), in canonical
// form, with its id and the fields the catalog indexes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "registry/checkpoint_manifest.h"
#include "roboloop/v1/common.pb.h"

namespace roboloop::registry {

// A validated manifest and the fields the catalog indexes.
struct Manifest {
  nlohmann::json json;             // the parsed manifest, as given
  std::string canonical;           // compact dump of `json` with sorted keys
  std::string id;                  // sha256 of `canonical`
  std::string model;               // model name
  std::string dataset_id;          // "" when none
  std::string parent_id;           // "" when none
  int64_t step = 0;                // training step
  std::string metrics_json;        // compact dump of `metrics`
  std::vector<v1::BlobRef> blobs;  // sorted by role
};

// Parses and validates `text` (CheckpointManifest::FromJson). The canonical form is the compact
// dump of the given object, so the id of a stored manifest never changes. InvalidArgument names
// the field (e.g. "policy.kind") and what is wrong with it, or quotes the JSON syntax error.
absl::StatusOr<Manifest> ParseManifest(absl::string_view text);

}  // namespace roboloop::registry
