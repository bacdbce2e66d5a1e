// The checkpoint manifest (ARCHITECTURE §2): parsing, validation, canonical form and id.
//
// Schema (format_version 1); every field is required unless marked optional:
//   format_version  integer, 1
//   model           string, a valid model name
//   policy          {kind: "mlp" | "transformer" | "torchscript", options: object}
//   obs_spec, action_spec
//                   {names: [string], shapes: [[integer >= 0]] (one per name),
//                    bounds: optional [object | null] (one per name)}
//   normalization   {feature: {mean|std|min|max|q01|q99: [number]}} (each stat optional)
//   action_chunk    {horizon: integer >= 1, execution: non-empty string}
//   dataset_id      string: "" or a 64-hex dataset id
//   parent_id       string: "" or a 64-hex checkpoint id
//   step            integer >= 0
//   metrics         {name: number}
//   blobs           {role: {sha256: 64 lowercase hex, size: integer >= 0}}, at least one
//   provenance      {roboloop_version, git_sha, host, user: optional strings,
//                    libraries: optional {name: string}}
// Unknown top-level fields are rejected. The canonical form is the compact dump of the parsed
// object (keys sorted, no whitespace); the checkpoint id is the sha256 of that form.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "roboloop/v1/common.pb.h"

namespace roboloop::registry {

// The manifest format version this code reads and writes.
inline constexpr int kManifestFormatVersion = 1;

// A validated manifest and the fields the catalog indexes.
struct Manifest {
  nlohmann::json json;             // the parsed manifest
  std::string canonical;           // compact dump with sorted keys
  std::string id;                  // sha256 of `canonical`
  std::string model;               // model name
  std::string dataset_id;          // "" when none
  std::string parent_id;           // "" when none
  int64_t step = 0;                // training step
  std::string metrics_json;        // compact dump of `metrics`
  std::vector<v1::BlobRef> blobs;  // sorted by role
};

// Parses and validates `text`. InvalidArgument names the field (e.g. "policy.kind") and what
// is wrong with it, or quotes the JSON syntax error.
absl::StatusOr<Manifest> ParseManifest(absl::string_view text);

}  // namespace roboloop::registry
