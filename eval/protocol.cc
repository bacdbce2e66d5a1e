#include "eval/protocol.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <google/protobuf/util/json_util.h>
#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/config.h"
#include "common/fs.h"
#include "common/sha256.h"
#include "common/status.h"

namespace roboloop::eval {
namespace {

constexpr char kYamlSuffix[] = ".yaml";
constexpr char kHashDomain[] = "roboloop.eval.protocol.v1\n";

std::string FileStem(const std::string& path) {
  std::string base = path.substr(path.find_last_of('/') + 1);
  if (absl::EndsWith(base, kYamlSuffix)) base.resize(base.size() - (sizeof(kYamlSuffix) - 1));
  return base;
}

std::string KnownProtocols(const std::string& dir) {
  absl::StatusOr<std::vector<std::string>> entries = ListDir(dir);
  if (!entries.ok()) return "none (cannot list " + dir + "; --protocols-dir names the folder to read)";
  std::vector<std::string> names;
  for (const std::string& entry : *entries) {
    if (absl::EndsWith(entry, kYamlSuffix)) names.push_back(FileStem(entry));
  }
  return names.empty() ? "none" : absl::StrJoin(names, ", ");
}

// Drops empty objects, recursively, so that an empty sub-message equals an absent one.
void DropEmptyObjects(nlohmann::json& json) {
  if (!json.is_object()) return;
  for (auto it = json.begin(); it != json.end();) {
    DropEmptyObjects(*it);
    it = it->is_object() && it->empty() ? json.erase(it) : std::next(it);
  }
}

std::string ProtocolLabel(const v1::Protocol& protocol) {
  return absl::StrCat("protocol '", protocol.name(), "'");
}

absl::Status CheckExecution(const v1::Protocol& protocol) {
  const v1::ChunkExecution& chunk = protocol.execution().chunk();
  switch (chunk.mode()) {
    case v1::ChunkExecution::FULL_CHUNK:
      return absl::OkStatus();
    case v1::ChunkExecution::RECEDING_HORIZON:
      if (chunk.receding_steps() >= 1) return absl::OkStatus();
      return absl::InvalidArgumentError(
          absl::StrCat(ProtocolLabel(protocol), ": execution.chunk.receding_steps must be >= 1 (got ",
                       chunk.receding_steps(), ")"));
    case v1::ChunkExecution::TEMPORAL_ENSEMBLE:
      if (std::isfinite(chunk.ensemble_coefficient()) && chunk.ensemble_coefficient() >= 0.0) {
        return absl::OkStatus();
      }
      return absl::InvalidArgumentError(absl::StrCat(
          ProtocolLabel(protocol), ": execution.chunk.ensemble_coefficient must be finite and >= 0 (got ",
          chunk.ensemble_coefficient(), ")"));
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          ProtocolLabel(protocol), ": execution.chunk.mode must be FULL_CHUNK, RECEDING_HORIZON or TEMPORAL_ENSEMBLE",
          chunk.mode() == v1::ChunkExecution::MODE_UNSPECIFIED
              ? " (the protocol sets none: add e.g. `execution: {chunk: {mode: FULL_CHUNK}}`)"
              : ""));
  }
}

}  // namespace

bool IsProtocolPath(const std::string& name_or_path) {
  return absl::StrContains(name_or_path, '/') || absl::EndsWith(name_or_path, kYamlSuffix);
}

absl::Status CheckServedProtocolName(const std::string& name) {
  if (IsProtocolPath(name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "protocol_name '", name, "' is a file path: a service loads only the protocols named in its protocols "
        "directory; send the protocol inline instead"));
  }
  if (absl::StrContains(name, '\0')) {
    return absl::InvalidArgumentError("protocol_name holds a NUL byte: a protocol name is a file name");
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Protocol> LoadProtocol(const std::string& name_or_path,
                                          const std::string& protocols_dir) {
  if (name_or_path.empty()) return absl::InvalidArgumentError("protocol name is empty");
  std::string path = IsProtocolPath(name_or_path)
                         ? name_or_path
                         : JoinPath(protocols_dir, name_or_path + kYamlSuffix);
  if (!PathExists(path)) {
    return absl::NotFoundError(absl::StrCat("protocol '", name_or_path, "' not found: no file ",
                                            path, "; known protocols in ", protocols_dir, ": ",
                                            KnownProtocols(protocols_dir)));
  }
  v1::Protocol protocol;
  ROBOLOOP_RETURN_IF_ERROR(LoadYamlFile(path, &protocol));
  if (protocol.name().empty()) protocol.set_name(FileStem(path));
  return protocol;
}

std::string CanonicalProtocolJson(const v1::Protocol& protocol) {
  v1::Protocol canonical = protocol;
  canonical.clear_name();
  canonical.clear_description();
  canonical.mutable_execution()->set_batch_invariant(BatchInvariant(protocol));
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  ROBOLOOP_CHECK(google::protobuf::util::MessageToJsonString(canonical, &json, options).ok());
  nlohmann::json sorted = nlohmann::json::parse(json);
  DropEmptyObjects(sorted);
  return sorted.dump();
}

std::string ProtocolHash(const v1::Protocol& protocol) {
  return Sha256Hex(absl::StrCat(kHashDomain, CanonicalProtocolJson(protocol)));
}

absl::Status ValidateProtocol(const v1::Protocol& protocol,
                              absl::Span<const std::string> known_tasks) {
  // The task first: an ad-hoc protocol on an unknown task has no horizon either.
  const bool known = std::find(known_tasks.begin(), known_tasks.end(), protocol.task()) != known_tasks.end();
  if (!protocol.task().empty() && !known) {
    return absl::InvalidArgumentError(absl::StrCat(ProtocolLabel(protocol), ": unknown task '", protocol.task(),
                                                   "'; known tasks: ", absl::StrJoin(known_tasks, ", ")));
  }
  return CheckProtocolSettings(protocol);
}

// InvalidArgument when the protocol's name holds a control character (it would garble tables and logs).
absl::Status CheckPrintableName(const v1::Protocol& protocol) {
  const std::string& name = protocol.name();
  const auto control = std::find_if(name.begin(), name.end(), [](char c) {
    return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
  if (control == name.end()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("protocol name '", absl::CHexEscape(name),
                                                 "' holds a control character: names are shown in tables and logs"));
}

absl::Status CheckProtocolSettings(const v1::Protocol& protocol) {
  ROBOLOOP_RETURN_IF_ERROR(CheckPrintableName(protocol));
  const std::string label = ProtocolLabel(protocol);
  if (protocol.task().empty()) return absl::InvalidArgumentError(label + ": task is not set");
  if (protocol.episodes() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(label, ": episodes must be >= 1 (got ", protocol.episodes(), ")"));
  }
  if (protocol.seed_start() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(label, ": seed_start must be >= 0 (got ", protocol.seed_start(), ")"));
  }
  if (protocol.episodes() > std::numeric_limits<int64_t>::max() - protocol.seed_start()) {
    return absl::InvalidArgumentError(absl::StrCat(label, ": seed_start + episodes must be at most 2^63 - 1 (got ",
                                                   protocol.seed_start(), " + ", protocol.episodes(), ")"));
  }
  if (protocol.max_steps() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(label, ": max_steps must be >= 1 (got ", protocol.max_steps(), ")"));
  }
  return CheckExecution(protocol);
}

absl::Status PinTaskDefinition(const std::string& actual_hash, v1::Protocol* protocol) {
  if (protocol->task_definition_hash().empty()) {
    protocol->set_task_definition_hash(actual_hash);
    return absl::OkStatus();
  }
  if (protocol->task_definition_hash() == actual_hash) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      ProtocolLabel(*protocol), " pins task '", protocol->task(), "' at definition hash ",
      protocol->task_definition_hash(), " but the task's definition hash is now ", actual_hash));
}

bool BatchInvariant(const v1::Protocol& protocol) {
  return !protocol.execution().has_batch_invariant() || protocol.execution().batch_invariant();
}

std::string DescribeSeedRange(const SeedRange& range) {
  // Unsigned: the end of a range that reaches 2^63 - 1 is still printed right.
  std::string text = absl::StrCat("base seed ", range.base_seed, ", episodes [", range.start, ", ",
                                  static_cast<uint64_t>(range.start) + static_cast<uint64_t>(range.count), ")");
  return range.label.empty() ? text : absl::StrCat(range.label, " (", text, ")");
}

bool Overlaps(const SeedRange& a, const SeedRange& b) {
  if (a.base_seed != b.base_seed || a.count <= 0 || b.count <= 0) return false;
  // Unsigned differences: no overflow for start >= 0.
  if (a.start <= b.start) {
    return static_cast<uint64_t>(b.start) - static_cast<uint64_t>(a.start) <
           static_cast<uint64_t>(a.count);
  }
  return static_cast<uint64_t>(a.start) - static_cast<uint64_t>(b.start) <
         static_cast<uint64_t>(b.count);
}

SeedRange ProtocolSeeds(const v1::Protocol& protocol) {
  return SeedRange{protocol.base_seed(), protocol.seed_start(), protocol.episodes(),
                   ProtocolLabel(protocol)};
}

absl::Status CheckSeedsDisjoint(const v1::Protocol& protocol, absl::Span<const SeedRange> used) {
  const SeedRange ours = ProtocolSeeds(protocol);
  for (const SeedRange& range : used) {
    if (Overlaps(ours, range)) {
      return absl::FailedPreconditionError(
          absl::StrCat(DescribeSeedRange(ours), " overlaps ", DescribeSeedRange(range),
                       "; evaluation seeds must be disjoint from them"));
    }
  }
  return absl::OkStatus();
}

}  // namespace roboloop::eval
