// References: the uniform way users name checkpoints and datasets.
//   <id> or a unique id prefix of at least 6 hex characters
//   <name>:v<N>      version N of a model (checkpoints) or of a dataset name
//   <name>@<alias>   an alias of a model; datasets know only @latest
// A miss names the reference and lists close matches among known names.
// Thread-safety: as the Catalog passed in (any thread).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "registry/catalog.h"

namespace roboloop::registry {

// The shortest id prefix a reference may use.
inline constexpr size_t kMinIdPrefix = 6;

// A reference split into its parts.
struct ParsedReference {
  enum class Form { kIdPrefix, kVersion, kAlias };
  Form form = Form::kIdPrefix;  // which of the three shapes
  std::string id_prefix;        // kIdPrefix: lowercase hex, 6..64 characters
  std::string name;             // kVersion, kAlias: model or dataset name
  int64_t version = 0;          // kVersion: >= 1
  std::string alias;            // kAlias
};

// Splits `ref` into its parts; InvalidArgument quotes the reference and the accepted shapes.
absl::StatusOr<ParsedReference> ParseReference(absl::string_view ref);

// Which kind of artifact a reference resolved to.
enum class ArtifactKind { kCheckpoint, kDataset };

// A resolved reference.
struct ResolvedArtifact {
  ArtifactKind kind = ArtifactKind::kCheckpoint;  // checkpoint or dataset
  std::string id;                                 // full id
};

// Resolves a checkpoint reference to its full id. NotFound for misses (with close matches),
// InvalidArgument for malformed or ambiguous references (listing the candidates).
absl::StatusOr<std::string> ResolveCheckpointRef(Catalog& catalog, absl::string_view ref);

// Resolves a dataset reference (id, name:vN, name@latest) to its full id.
absl::StatusOr<std::string> ResolveDatasetRef(Catalog& catalog, absl::string_view ref);

// Resolves a reference that may name either a checkpoint or a dataset; a name or id prefix
// matching both kinds is ambiguous (InvalidArgument).
absl::StatusOr<ResolvedArtifact> ResolveArtifactRef(Catalog& catalog, absl::string_view ref);

}  // namespace roboloop::registry
