// Lineage of a dataset file: the operation that made it and the inputs it came from. Stored
// as JSON in the root attribute `roboloop_lineage`.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace roboloop::data {

// One input of the operation that produced a dataset.
struct ParentRef {
  std::string kind;    // "dataset" (a robomimic file, e.g. a merge input) or "aloha_episode"
  std::string path;    // path of the input as given to the operation
  std::string sha256;  // lowercase hex sha256 of the input file's bytes

  bool operator==(const ParentRef& other) const {
    return kind == other.kind && path == other.path && sha256 == other.sha256;
  }
};

// Where a dataset came from.
struct Lineage {
  std::string operation = "write";  // "write", "merge", "import_aloha", ...
  std::vector<ParentRef> parents;   // inputs in the order they were used

  bool operator==(const Lineage& other) const {
    return operation == other.operation && parents == other.parents;
  }
};

// Serialises `lineage` as {"operation": ..., "parents": [{kind, path, sha256}, ...]}.
nlohmann::json LineageToJson(const Lineage& lineage);

// Parses LineageToJson's output; errors name `display` (where the text came from).
absl::StatusOr<Lineage> LineageFromJson(const std::string& text, const std::string& display);

// The sha256 of the parents of kind "dataset": the registry ids of parent datasets.
std::vector<std::string> ParentDatasetIds(const Lineage& lineage);

}  // namespace roboloop::data
