#include "registry/reference.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/sha256.h"
#include "common/status.h"
#include "registry/names.h"

namespace roboloop::registry {
namespace {

constexpr int kMaxCandidates = 10;
constexpr char kShapes[] =
    "expected an id (or a unique prefix of at least 6 hex characters), name:vN or name@alias";

absl::Status BadReference(absl::string_view ref, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("invalid reference \"", absl::Utf8SafeCEscape(ref), "\": ", why));
}

absl::StatusOr<ParsedReference> ParseVersion(absl::string_view ref, size_t colon) {
  ParsedReference parsed;
  parsed.form = ParsedReference::Form::kVersion;
  parsed.name = std::string(ref.substr(0, colon));
  ROBOLOOP_RETURN_IF_ERROR(ValidateName("model or dataset", parsed.name));
  absl::string_view version = ref.substr(colon + 1);
  if (version.size() < 2 || version[0] != 'v' ||
      !absl::SimpleAtoi(version.substr(1), &parsed.version) || parsed.version < 1 ||
      !absl::ascii_isdigit(static_cast<unsigned char>(version[1]))) {
    return BadReference(ref, "expected name:vN with N >= 1 after ':'");
  }
  return parsed;
}

absl::StatusOr<ParsedReference> ParseAlias(absl::string_view ref, size_t at) {
  ParsedReference parsed;
  parsed.form = ParsedReference::Form::kAlias;
  parsed.name = std::string(ref.substr(0, at));
  parsed.alias = std::string(ref.substr(at + 1));
  ROBOLOOP_RETURN_IF_ERROR(ValidateName("model or dataset", parsed.name));
  ROBOLOOP_RETURN_IF_ERROR(ValidateName("alias", parsed.alias));
  return parsed;
}

// "; did you mean <ref>@latest?" when `ref` could be a model or dataset name, else "".
std::string NameHint(absl::string_view ref) {
  return ValidateName("model", ref).ok() ? absl::StrCat("; did you mean ", ref, "@latest?") : "";
}

absl::StatusOr<ParsedReference> ParseIdPrefix(absl::string_view ref) {
  std::string lowered = absl::AsciiStrToLower(ref);
  if (!IsLowerHex(lowered)) return BadReference(ref, absl::StrCat(kShapes, NameHint(ref)));
  if (lowered.size() < kMinIdPrefix) {
    // A short name of hex letters ("ed", "cafe") reads as an id prefix: the hint covers a name too.
    return BadReference(ref, absl::StrCat("id prefix too short: give at least 6 hex characters", NameHint(ref)));
  }
  if (lowered.size() > 64) return BadReference(ref, "longer than a 64-character id");
  ParsedReference parsed;
  parsed.id_prefix = std::move(lowered);
  return parsed;
}

std::string Quote(absl::string_view text) { return absl::StrCat("'", text, "'"); }

// Resolves an id prefix against `candidates` found for it; `kind` names the artifact kind.
absl::StatusOr<std::string> PickUnique(const std::vector<std::string>& candidates,
                                       absl::string_view prefix, absl::string_view kind) {
  if (candidates.empty()) {
    return absl::NotFoundError(absl::StrCat("no ", kind, " id starts with ", prefix));
  }
  if (candidates.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        kind, " id prefix ", prefix, " is ambiguous; candidates: ", absl::StrJoin(candidates, ", "),
        candidates.size() >= static_cast<size_t>(kMaxCandidates) ? ", ..." : ""));
  }
  return candidates.front();
}

absl::Status UnknownName(absl::string_view kind, absl::string_view name,
                         const std::vector<std::string>& known) {
  return absl::NotFoundError(
      absl::StrCat("unknown ", kind, " ", Quote(name), CloseMatchesSuffix(name, known)));
}

absl::StatusOr<std::string> CheckpointByName(Catalog& catalog, const ParsedReference& parsed) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::string> models, catalog.ModelNames());
  if (std::find(models.begin(), models.end(), parsed.name) == models.end()) {
    return UnknownName("model", parsed.name, models);
  }
  if (parsed.form == ParsedReference::Form::kVersion) {
    ROBOLOOP_ASSIGN_OR_RETURN(std::optional<std::string> id,
                              catalog.CheckpointIdByVersion(parsed.name, parsed.version));
    if (id) return *id;
    ROBOLOOP_ASSIGN_OR_RETURN(int64_t max, catalog.MaxCheckpointVersion(parsed.name));
    return absl::NotFoundError(absl::StrCat("model ", Quote(parsed.name), " has no version ",
                                            parsed.version, " (it has versions 1..", max, ")"));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(std::optional<std::string> id,
                            catalog.CheckpointIdByAlias(parsed.name, parsed.alias));
  if (id) return *id;
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::string> aliases, catalog.AliasNames(parsed.name));
  return absl::NotFoundError(absl::StrCat("model ", Quote(parsed.name), " has no alias ",
                                          Quote(parsed.alias), "; its aliases: ",
                                          aliases.empty() ? "none" : absl::StrJoin(aliases, ", "),
                                          CloseMatchesSuffix(parsed.alias, aliases)));
}

absl::StatusOr<std::string> DatasetByName(Catalog& catalog, const ParsedReference& parsed) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::string> names, catalog.DatasetNames());
  if (std::find(names.begin(), names.end(), parsed.name) == names.end()) {
    return UnknownName("dataset", parsed.name, names);
  }
  if (parsed.form == ParsedReference::Form::kAlias && parsed.alias != "latest") {
    return absl::InvalidArgumentError(absl::StrCat("dataset ", Quote(parsed.name), " has no alias ",
                                                   Quote(parsed.alias),
                                                   "; datasets know only @latest"));
  }
  int64_t version = parsed.form == ParsedReference::Form::kVersion ? parsed.version : 0;
  ROBOLOOP_ASSIGN_OR_RETURN(std::optional<std::string> id,
                            catalog.DatasetIdByVersion(parsed.name, version));
  if (id) return *id;
  ROBOLOOP_ASSIGN_OR_RETURN(int64_t max, catalog.MaxDatasetVersion(parsed.name));
  return absl::NotFoundError(absl::StrCat("dataset ", Quote(parsed.name), " has no version ",
                                          version, " (it has versions 1..", max, ")"));
}

}  // namespace

absl::StatusOr<ParsedReference> ParseReference(absl::string_view ref) {
  if (ref.empty()) return BadReference(ref, "empty");
  size_t at = ref.find('@');
  if (at != absl::string_view::npos) return ParseAlias(ref, at);
  size_t colon = ref.find(':');
  if (colon != absl::string_view::npos) return ParseVersion(ref, colon);
  return ParseIdPrefix(ref);
}

absl::StatusOr<std::string> ResolveCheckpointRef(Catalog& catalog, absl::string_view ref) {
  ROBOLOOP_ASSIGN_OR_RETURN(ParsedReference parsed, ParseReference(ref));
  if (parsed.form != ParsedReference::Form::kIdPrefix) return CheckpointByName(catalog, parsed);
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::string> candidates,
                            catalog.CheckpointIdsWithPrefix(parsed.id_prefix, kMaxCandidates));
  return PickUnique(candidates, parsed.id_prefix, "checkpoint");
}

absl::StatusOr<std::string> ResolveDatasetRef(Catalog& catalog, absl::string_view ref) {
  ROBOLOOP_ASSIGN_OR_RETURN(ParsedReference parsed, ParseReference(ref));
  if (parsed.form != ParsedReference::Form::kIdPrefix) return DatasetByName(catalog, parsed);
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::string> candidates,
                            catalog.DatasetIdsWithPrefix(parsed.id_prefix, kMaxCandidates));
  return PickUnique(candidates, parsed.id_prefix, "dataset");
}

absl::StatusOr<ResolvedArtifact> ResolveArtifactRef(Catalog& catalog, absl::string_view ref) {
  ROBOLOOP_ASSIGN_OR_RETURN(ParsedReference parsed, ParseReference(ref));
  absl::StatusOr<std::string> checkpoint = ResolveCheckpointRef(catalog, ref);
  absl::StatusOr<std::string> dataset = ResolveDatasetRef(catalog, ref);
  if (checkpoint.ok() && dataset.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "reference \"", ref, "\" is ambiguous: checkpoint ", *checkpoint, " and dataset ", *dataset));
  }
  if (checkpoint.ok()) return ResolvedArtifact{ArtifactKind::kCheckpoint, *checkpoint};
  if (dataset.ok()) return ResolvedArtifact{ArtifactKind::kDataset, *dataset};
  if (!absl::IsNotFound(checkpoint.status())) return checkpoint.status();
  if (!absl::IsNotFound(dataset.status())) return dataset.status();
  if (parsed.form == ParsedReference::Form::kIdPrefix) {
    return absl::NotFoundError(absl::StrCat("no checkpoint or dataset id starts with ",
                                            parsed.id_prefix));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::string> models, catalog.ModelNames());
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::string> datasets, catalog.DatasetNames());
  bool is_model = std::find(models.begin(), models.end(), parsed.name) != models.end();
  if (is_model) return checkpoint.status();
  bool is_dataset = std::find(datasets.begin(), datasets.end(), parsed.name) != datasets.end();
  if (is_dataset) return dataset.status();
  models.insert(models.end(), datasets.begin(), datasets.end());
  return UnknownName("model or dataset", parsed.name, models);
}

}  // namespace roboloop::registry
