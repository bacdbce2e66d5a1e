// The checkpoint manifest (docs/architecture.md §2) as a typed value: the one place that reads, checks
// and writes it. Training writes it (train/checkpoint_io.cc), the registry validates and indexes
// it (registry/manifest.cc), rollouts, evaluation and export read it. docs/manifest.md is the
// user's reference; `roboloop registry put --policy-file` writes one for a policy file.
//
// Schema (format_version 1); every field is required unless marked optional:
//   format_version  integer, 1
//   model           string, a valid model name
//   policy          {kind: a registered policy kind (registry/policy_kind.h),
//                    options: object; checked against the kind's options schema where a policy
//                    is built from it (CompleteOptions), so that stored manifests stay readable}
//   obs_spec, action_spec
//                   {names: [string], shapes: [[integer >= 0]] (one per name),
//                    bounds: optional [object | null] (one per name)}
//                   obs_spec may also hold cameras: optional [{name: non-empty string,
//                    camera: string ("" = the free camera), width: integer >= 1,
//                    height: integer >= 1}], the policy's camera images in the order it reads
//                    them (docs/vision.md); absent = none. Unknown fields of either spec or of a
//                    camera are rejected.
//   normalization   {feature: {mean|std|min|max|q01|q99: [number]}} (each stat optional)
//   action_chunk    {horizon: integer >= 1, execution: optional non-empty string}; only
//                   manifests written before issue 27 carry `execution`: nothing runs by it
//                   (rollouts and evaluation protocols choose the execution,
//                   sim/checkpoint_policy.h), it is kept so that those manifests round-trip
//   dataset_id      string: "" or a 64-hex dataset id
//   parent_id       string: "" or a 64-hex checkpoint id
//   step            integer >= 0
//   metrics         {name: number}
//   blobs           {role: {sha256: 64 lowercase hex, size: integer >= 0}}, at least one
//   provenance      {roboloop_version, git_sha, host, user: optional strings,
//                    libraries: optional {name: string}}
// Unknown top-level fields are rejected.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "registry/policy_kind.h"

namespace roboloop::registry {

// The manifest format version this code reads and writes.
inline constexpr int kManifestFormatVersion = 1;

// One camera image a policy reads (docs/vision.md): uint8 height x width x 3.
struct ManifestCamera {
  std::string name;    // observation name; datasets store it as obs/<name>_image
  std::string camera;  // the MJCF camera rendering it; "" = the free camera
  int64_t width = 0;   // pixels, >= 1
  int64_t height = 0;  // pixels, >= 1

  bool operator==(const ManifestCamera& other) const {
    return name == other.name && camera == other.camera && width == other.width && height == other.height;
  }
};

// The named arrays of an observation or action.
struct ArraySpecs {
  std::vector<std::string> names;                 // one per array
  std::vector<std::vector<int64_t>> shapes;       // per-step shape of each
  std::optional<std::vector<nlohmann::json>> bounds;  // optional: object or null per name
  std::vector<ManifestCamera> cameras;            // obs_spec only: images, in order; empty = none

  // Floats of one step: the sum of the shapes' element counts.
  int64_t Floats() const;
};

// What the policy is: its kind and the kind's options, as stored (defaults not filled in).
struct PolicySection {
  std::string kind;                                  // a registered policy kind
  nlohmann::json options = nlohmann::json::object(); // the kind's options (CompleteOptions checks them)
};

// Digest of one stored blob.
struct BlobDigest {
  std::string sha256;  // 64 lowercase hex
  int64_t size = 0;    // bytes
};

// Who and what produced the checkpoint.
struct Provenance {
  std::optional<std::string> roboloop_version;  // optional
  std::optional<std::string> git_sha;           // optional
  std::optional<std::string> host;              // optional
  std::optional<std::string> user;              // optional
  std::optional<std::map<std::string, std::string>> libraries;  // optional: name -> version
};

// A checkpoint manifest.
struct CheckpointManifest {
  std::string model;                    // registry model name
  PolicySection policy;                 // kind and options
  ArraySpecs obs_spec;                  // observation arrays, in row order
  ArraySpecs action_spec;               // action arrays
  nlohmann::json normalization = nlohmann::json::object();  // train/normalization.h JSON
  int64_t action_chunk_horizon = 1;     // actions the policy predicts per query
  std::optional<std::string> legacy_chunk_execution;  // action_chunk.execution of old manifests
  std::string dataset_id;               // "" when none
  std::string parent_id;                // "" when none
  int64_t step = 0;                     // training steps taken
  nlohmann::json metrics = nlohmann::json::object();  // {name: number}
  std::map<std::string, BlobDigest> blobs;  // by role ("policy", "trainer_state", ...)
  Provenance provenance;                // producer

  // Parses and validates `json` (the schema above). InvalidArgument names the field (e.g.
  // "manifest field 'policy.kind'") and what is wrong with it.
  static absl::StatusOr<CheckpointManifest> FromJson(const nlohmann::json& json);

  // Parses `text` as JSON and then as FromJson; a syntax error is quoted.
  static absl::StatusOr<CheckpointManifest> Parse(const std::string& text);

  // The manifest in the schema above (format_version kManifestFormatVersion).
  nlohmann::json ToJson() const;

  // The policy's registered kind. InvalidArgument for a kind no longer registered.
  absl::StatusOr<const PolicyKind*> Kind() const;

  // policy.options with the kind's defaults filled in (CompletePolicyOptions).
  absl::StatusOr<nlohmann::json> CompleteOptions() const;

  // The digest of the blob `role`, or nullptr.
  const BlobDigest* Blob(const std::string& role) const;
};

// The blob role of a checkpoint's inference weights.
inline constexpr char kPolicyBlobRole[] = "policy";

}  // namespace roboloop::registry
