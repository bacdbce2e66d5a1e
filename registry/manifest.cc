#include "registry/manifest.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/sha256.h"
#include "common/status.h"
#include "registry/names.h"

namespace roboloop::registry {
namespace {

using nlohmann::json;

absl::Status FieldError(absl::string_view field, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat("manifest field '", field, "': ", problem));
}

// Returns the member `key` of `object`, or an error naming `path` when it is missing.
absl::StatusOr<const json*> Member(const json& object, const std::string& key,
                                   const std::string& path) {
  auto it = object.find(key);
  if (it == object.end()) return FieldError(path, "missing");
  return &*it;
}

std::string Child(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : absl::StrCat(parent, ".", key);
}

absl::StatusOr<const json*> Typed(const json& object, const std::string& key,
                                  const std::string& parent, json::value_t type) {
  std::string path = Child(parent, key);
  ROBOLOOP_ASSIGN_OR_RETURN(const json* value, Member(object, key, path));
  bool ok = false;
  const char* expected = "";
  switch (type) {
    case json::value_t::object: ok = value->is_object(); expected = "an object"; break;
    case json::value_t::array: ok = value->is_array(); expected = "an array"; break;
    case json::value_t::string: ok = value->is_string(); expected = "a string"; break;
    case json::value_t::number_integer: ok = value->is_number_integer(); expected = "an integer"; break;
    default: ok = value->is_number(); expected = "a number"; break;
  }
  if (!ok) return FieldError(path, absl::StrCat("expected ", expected, ", got ", value->type_name()));
  return value;
}

absl::Status CheckOptionalId(const json& object, const std::string& key) {
  ROBOLOOP_ASSIGN_OR_RETURN(const json* value, Typed(object, key, "", json::value_t::string));
  const std::string& id = value->get_ref<const std::string&>();
  if (!id.empty() && !IsSha256Hex(id)) {
    return FieldError(key, "expected \"\" or 64 lowercase hex characters");
  }
  return absl::OkStatus();
}

absl::Status CheckSpec(const json& manifest, const std::string& key) {
  ROBOLOOP_ASSIGN_OR_RETURN(const json* spec, Typed(manifest, key, "", json::value_t::object));
  ROBOLOOP_ASSIGN_OR_RETURN(const json* names, Typed(*spec, "names", key, json::value_t::array));
  ROBOLOOP_ASSIGN_OR_RETURN(const json* shapes, Typed(*spec, "shapes", key, json::value_t::array));
  for (size_t i = 0; i < names->size(); ++i) {
    if (!(*names)[i].is_string() || (*names)[i].get_ref<const std::string&>().empty()) {
      return FieldError(absl::StrCat(key, ".names[", i, "]"), "expected a non-empty string");
    }
  }
  if (shapes->size() != names->size()) {
    return FieldError(Child(key, "shapes"), absl::StrCat("has ", shapes->size(), " entries for ",
                                                         names->size(), " names"));
  }
  for (size_t i = 0; i < shapes->size(); ++i) {
    const json& shape = (*shapes)[i];
    bool ok = shape.is_array();
    for (size_t d = 0; ok && d < shape.size(); ++d) {
      ok = shape[d].is_number_integer() && shape[d].get<int64_t>() >= 0;
    }
    if (!ok) {
      return FieldError(absl::StrCat(key, ".shapes[", i, "]"),
                        "expected an array of non-negative integers");
    }
  }
  auto bounds = spec->find("bounds");
  if (bounds == spec->end()) return absl::OkStatus();
  if (!bounds->is_array() || bounds->size() != names->size()) {
    return FieldError(Child(key, "bounds"), "expected an array with one entry per name");
  }
  for (size_t i = 0; i < bounds->size(); ++i) {
    if (!(*bounds)[i].is_object() && !(*bounds)[i].is_null()) {
      return FieldError(absl::StrCat(key, ".bounds[", i, "]"), "expected an object or null");
    }
  }
  return absl::OkStatus();
}

absl::Status CheckPolicy(const json& manifest) {
  ROBOLOOP_ASSIGN_OR_RETURN(const json* policy, Typed(manifest, "policy", "", json::value_t::object));
  ROBOLOOP_ASSIGN_OR_RETURN(const json* kind, Typed(*policy, "kind", "policy", json::value_t::string));
  static const std::set<std::string> kKinds = {"mlp", "transformer", "torchscript"};
  if (kKinds.count(kind->get<std::string>()) == 0) {
    return FieldError("policy.kind", absl::StrCat("unknown kind \"", kind->get<std::string>(),
                                                  "\"; known: ", absl::StrJoin(kKinds, ", ")));
  }
  return Typed(*policy, "options", "policy", json::value_t::object).status();
}

absl::Status CheckNormalization(const json& manifest) {
  ROBOLOOP_ASSIGN_OR_RETURN(const json* normalization,
                            Typed(manifest, "normalization", "", json::value_t::object));
  static const std::set<std::string> kStats = {"mean", "std", "min", "max", "q01", "q99"};
  for (const auto& [feature, stats] : normalization->items()) {
    std::string path = Child("normalization", feature);
    if (!stats.is_object()) return FieldError(path, "expected an object of statistics");
    for (const auto& [stat, values] : stats.items()) {
      std::string stat_path = Child(path, stat);
      if (kStats.count(stat) == 0) {
        return FieldError(stat_path, absl::StrCat("unknown statistic; known: ",
                                                  absl::StrJoin(kStats, ", ")));
      }
      bool ok = values.is_array();
      for (size_t i = 0; ok && i < values.size(); ++i) ok = values[i].is_number();
      if (!ok) return FieldError(stat_path, "expected an array of numbers");
    }
  }
  return absl::OkStatus();
}

absl::Status CheckActionChunk(const json& manifest) {
  ROBOLOOP_ASSIGN_OR_RETURN(const json* chunk,
                            Typed(manifest, "action_chunk", "", json::value_t::object));
  ROBOLOOP_ASSIGN_OR_RETURN(const json* horizon,
                            Typed(*chunk, "horizon", "action_chunk", json::value_t::number_integer));
  if (horizon->get<int64_t>() < 1) return FieldError("action_chunk.horizon", "must be >= 1");
  ROBOLOOP_ASSIGN_OR_RETURN(const json* execution,
                            Typed(*chunk, "execution", "action_chunk", json::value_t::string));
  if (execution->get_ref<const std::string&>().empty()) {
    return FieldError("action_chunk.execution", "must not be empty");
  }
  return absl::OkStatus();
}

absl::Status CheckMetrics(const json& manifest) {
  ROBOLOOP_ASSIGN_OR_RETURN(const json* metrics, Typed(manifest, "metrics", "", json::value_t::object));
  for (const auto& [name, value] : metrics->items()) {
    if (!value.is_number()) return FieldError(Child("metrics", name), "expected a number");
  }
  return absl::OkStatus();
}

absl::Status CheckProvenance(const json& manifest) {
  ROBOLOOP_ASSIGN_OR_RETURN(const json* provenance,
                            Typed(manifest, "provenance", "", json::value_t::object));
  for (const char* key : {"roboloop_version", "git_sha", "host", "user"}) {
    auto it = provenance->find(key);
    if (it != provenance->end() && !it->is_string()) {
      return FieldError(Child("provenance", key), "expected a string");
    }
  }
  auto libraries = provenance->find("libraries");
  if (libraries == provenance->end()) return absl::OkStatus();
  if (!libraries->is_object()) return FieldError("provenance.libraries", "expected an object");
  for (const auto& [name, version] : libraries->items()) {
    if (!version.is_string()) {
      return FieldError(Child("provenance.libraries", name), "expected a version string");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<v1::BlobRef>> ParseBlobs(const json& manifest) {
  ROBOLOOP_ASSIGN_OR_RETURN(const json* blobs, Typed(manifest, "blobs", "", json::value_t::object));
  if (blobs->empty()) return FieldError("blobs", "must name at least one blob");
  std::vector<v1::BlobRef> refs;
  for (const auto& [role, entry] : blobs->items()) {
    std::string path = Child("blobs", role);
    absl::Status role_ok = ValidateName("blob role", role);
    if (!role_ok.ok()) return FieldError(path, role_ok.message());
    if (!entry.is_object()) return FieldError(path, "expected {sha256, size}");
    ROBOLOOP_ASSIGN_OR_RETURN(const json* sha, Typed(entry, "sha256", path, json::value_t::string));
    ROBOLOOP_ASSIGN_OR_RETURN(const json* size,
                              Typed(entry, "size", path, json::value_t::number_integer));
    if (!IsSha256Hex(sha->get<std::string>())) {
      return FieldError(Child(path, "sha256"), "expected 64 lowercase hex characters");
    }
    if (size->get<int64_t>() < 0) return FieldError(Child(path, "size"), "must be >= 0");
    v1::BlobRef ref;
    ref.set_role(role);
    ref.set_sha256(sha->get<std::string>());
    ref.set_size(size->get<int64_t>());
    refs.push_back(std::move(ref));
  }
  return refs;
}

absl::Status CheckTopLevelKeys(const json& manifest) {
  static const std::set<std::string> kKeys = {
      "format_version", "model",        "policy",     "obs_spec",  "action_spec",
      "normalization",  "action_chunk", "dataset_id", "parent_id", "step",
      "metrics",        "blobs",        "provenance"};
  for (const auto& [key, value] : manifest.items()) {
    if (kKeys.count(key) == 0) return FieldError(key, "unknown field");
  }
  return absl::OkStatus();
}

absl::Status CheckHeader(const json& manifest) {
  ROBOLOOP_ASSIGN_OR_RETURN(const json* version,
                            Typed(manifest, "format_version", "", json::value_t::number_integer));
  if (version->get<int64_t>() != kManifestFormatVersion) {
    return FieldError("format_version", absl::StrCat("unsupported version ", version->dump(),
                                                     "; this build reads ", kManifestFormatVersion));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(const json* model, Typed(manifest, "model", "", json::value_t::string));
  absl::Status name_ok = ValidateName("model", model->get<std::string>());
  if (!name_ok.ok()) return FieldError("model", name_ok.message());
  ROBOLOOP_ASSIGN_OR_RETURN(const json* step, Typed(manifest, "step", "", json::value_t::number_integer));
  if (step->get<int64_t>() < 0) return FieldError("step", "must be >= 0");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Manifest> ParseManifest(absl::string_view text) {
  Manifest manifest;
  try {
    manifest.json = json::parse(text.begin(), text.end());
  } catch (const json::exception& error) {
    return absl::InvalidArgumentError(absl::StrCat("manifest is not valid JSON: ", error.what()));
  }
  const json& root = manifest.json;
  if (!root.is_object()) return absl::InvalidArgumentError("manifest must be a JSON object");
  ROBOLOOP_RETURN_IF_ERROR(CheckTopLevelKeys(root));
  ROBOLOOP_RETURN_IF_ERROR(CheckHeader(root));
  ROBOLOOP_RETURN_IF_ERROR(CheckPolicy(root));
  ROBOLOOP_RETURN_IF_ERROR(CheckSpec(root, "obs_spec"));
  ROBOLOOP_RETURN_IF_ERROR(CheckSpec(root, "action_spec"));
  ROBOLOOP_RETURN_IF_ERROR(CheckNormalization(root));
  ROBOLOOP_RETURN_IF_ERROR(CheckActionChunk(root));
  ROBOLOOP_RETURN_IF_ERROR(CheckOptionalId(root, "dataset_id"));
  ROBOLOOP_RETURN_IF_ERROR(CheckOptionalId(root, "parent_id"));
  ROBOLOOP_RETURN_IF_ERROR(CheckMetrics(root));
  ROBOLOOP_RETURN_IF_ERROR(CheckProvenance(root));
  ROBOLOOP_ASSIGN_OR_RETURN(manifest.blobs, ParseBlobs(root));

  try {
    manifest.canonical = root.dump();
  } catch (const json::exception& error) {
    return absl::InvalidArgumentError(absl::StrCat("manifest cannot be serialized: ", error.what()));
  }
  manifest.id = Sha256Hex(manifest.canonical);
  manifest.model = root["model"].get<std::string>();
  manifest.dataset_id = root["dataset_id"].get<std::string>();
  manifest.parent_id = root["parent_id"].get<std::string>();
  manifest.step = root["step"].get<int64_t>();
  manifest.metrics_json = root["metrics"].dump();
  return manifest;
}

}  // namespace roboloop::registry
