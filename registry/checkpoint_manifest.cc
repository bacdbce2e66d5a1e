// Reading, validating and writing CheckpointManifest.
#include "registry/checkpoint_manifest.h"

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

std::string Child(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : absl::StrCat(parent, ".", key);
}

// The member `key` of `object` (at `parent`) if it has `type`; an error naming it otherwise.
absl::StatusOr<const json*> Typed(const json& object, const std::string& key, const std::string& parent,
                                  json::value_t type) {
  const std::string path = Child(parent, key);
  auto it = object.find(key);
  if (it == object.end()) return FieldError(path, "missing");
  bool ok = false;
  const char* expected = "";
  switch (type) {
    case json::value_t::object: ok = it->is_object(); expected = "an object"; break;
    case json::value_t::array: ok = it->is_array(); expected = "an array"; break;
    case json::value_t::string: ok = it->is_string(); expected = "a string"; break;
    case json::value_t::number_integer: ok = it->is_number_integer(); expected = "an integer"; break;
    default: ok = it->is_number(); expected = "a number"; break;
  }
  if (!ok) return FieldError(path, absl::StrCat("expected ", expected, ", got ", it->type_name()));
  return &*it;
}

absl::StatusOr<std::string> String(const json& object, const std::string& key, const std::string& parent) {
  ROBOLOOP_ASSIGN_OR_RETURN(const json* value, Typed(object, key, parent, json::value_t::string));
  return value->get<std::string>();
}

absl::StatusOr<int64_t> NonNegative(const json& object, const std::string& key, const std::string& parent) {
  ROBOLOOP_ASSIGN_OR_RETURN(const json* value, Typed(object, key, parent, json::value_t::number_integer));
  if (value->get<int64_t>() < 0) return FieldError(Child(parent, key), "must be >= 0");
  return value->get<int64_t>();
}

absl::StatusOr<std::string> OptionalId(const json& manifest, const std::string& key) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::string id, String(manifest, key, ""));
  if (!id.empty() && !IsSha256Hex(id)) return FieldError(key, "expected \"\" or 64 lowercase hex characters");
  return id;
}

absl::Status ReadNames(const json& names, const std::string& key, ArraySpecs& specs) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (!names[i].is_string() || names[i].get_ref<const std::string&>().empty()) {
      return FieldError(absl::StrCat(key, ".names[", i, "]"), "expected a non-empty string");
    }
    specs.names.push_back(names[i].get<std::string>());
  }
  return absl::OkStatus();
}

absl::Status ReadShapes(const json& shapes, const std::string& key, ArraySpecs& specs) {
  if (shapes.size() != specs.names.size()) {
    return FieldError(Child(key, "shapes"),
                      absl::StrCat("has ", shapes.size(), " entries for ", specs.names.size(), " names"));
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    const json& shape = shapes[i];
    bool ok = shape.is_array();
    for (size_t d = 0; ok && d < shape.size(); ++d) ok = shape[d].is_number_integer() && shape[d].get<int64_t>() >= 0;
    if (!ok) return FieldError(absl::StrCat(key, ".shapes[", i, "]"), "expected an array of non-negative integers");
    specs.shapes.push_back(shape.get<std::vector<int64_t>>());
  }
  return absl::OkStatus();
}

absl::Status ReadBounds(const json& spec, const std::string& key, ArraySpecs& specs) {
  auto bounds = spec.find("bounds");
  if (bounds == spec.end()) return absl::OkStatus();
  if (!bounds->is_array() || bounds->size() != specs.names.size()) {
    return FieldError(Child(key, "bounds"), "expected an array with one entry per name");
  }
  specs.bounds.emplace();
  for (size_t i = 0; i < bounds->size(); ++i) {
    if (!(*bounds)[i].is_object() && !(*bounds)[i].is_null()) {
      return FieldError(absl::StrCat(key, ".bounds[", i, "]"), "expected an object or null");
    }
    specs.bounds->push_back((*bounds)[i]);
  }
  return absl::OkStatus();
}

absl::Status CheckKnownKeys(const json& object, const std::string& path, const std::set<std::string>& known) {
  for (const auto& [key, value] : object.items()) {
    if (known.count(key) == 0) {
      return FieldError(Child(path, key), absl::StrCat("unknown field; known: ", absl::StrJoin(known, ", ")));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Positive(const json& object, const std::string& key, const std::string& parent) {
  ROBOLOOP_ASSIGN_OR_RETURN(const json* value, Typed(object, key, parent, json::value_t::number_integer));
  if (value->get<int64_t>() < 1) return FieldError(Child(parent, key), "must be >= 1");
  return value->get<int64_t>();
}

absl::StatusOr<ManifestCamera> ReadCamera(const json& entry, const std::string& path) {
  if (!entry.is_object()) return FieldError(path, "expected {name, camera, width, height}");
  ROBOLOOP_RETURN_IF_ERROR(CheckKnownKeys(entry, path, {"name", "camera", "width", "height"}));
  ManifestCamera camera;
  ROBOLOOP_ASSIGN_OR_RETURN(camera.name, String(entry, "name", path));
  if (camera.name.empty()) return FieldError(Child(path, "name"), "must not be empty");
  ROBOLOOP_ASSIGN_OR_RETURN(camera.camera, String(entry, "camera", path));
  ROBOLOOP_ASSIGN_OR_RETURN(camera.width, Positive(entry, "width", path));
  ROBOLOOP_ASSIGN_OR_RETURN(camera.height, Positive(entry, "height", path));
  return camera;
}

// obs_spec.cameras: camera names unique among themselves and the spec's names.
absl::Status ReadCameras(const json& spec, ArraySpecs& specs) {
  auto cameras = spec.find("cameras");
  if (cameras == spec.end()) return absl::OkStatus();
  if (!cameras->is_array()) return FieldError("obs_spec.cameras", "expected an array");
  std::set<std::string> seen(specs.names.begin(), specs.names.end());
  for (size_t i = 0; i < cameras->size(); ++i) {
    const std::string path = absl::StrCat("obs_spec.cameras[", i, "]");
    ROBOLOOP_ASSIGN_OR_RETURN(ManifestCamera camera, ReadCamera((*cameras)[i], path));
    if (!seen.insert(camera.name).second) {
      return FieldError(Child(path, "name"), absl::StrCat("'", camera.name, "' is already an observation name"));
    }
    specs.cameras.push_back(std::move(camera));
  }
  return absl::OkStatus();
}

absl::StatusOr<ArraySpecs> ReadArraySpecs(const json& manifest, const std::string& key) {
  ROBOLOOP_ASSIGN_OR_RETURN(const json* spec, Typed(manifest, key, "", json::value_t::object));
  const bool obs = key == "obs_spec";
  std::set<std::string> known = {"names", "shapes", "bounds"};
  if (obs) known.insert("cameras");
  ROBOLOOP_RETURN_IF_ERROR(CheckKnownKeys(*spec, key, known));
  ROBOLOOP_ASSIGN_OR_RETURN(const json* names, Typed(*spec, "names", key, json::value_t::array));
  ROBOLOOP_ASSIGN_OR_RETURN(const json* shapes, Typed(*spec, "shapes", key, json::value_t::array));
  ArraySpecs specs;
  ROBOLOOP_RETURN_IF_ERROR(ReadNames(*names, key, specs));
  ROBOLOOP_RETURN_IF_ERROR(ReadShapes(*shapes, key, specs));
  ROBOLOOP_RETURN_IF_ERROR(ReadBounds(*spec, key, specs));
  if (obs) ROBOLOOP_RETURN_IF_ERROR(ReadCameras(*spec, specs));
  return specs;
}

absl::StatusOr<PolicySection> ReadPolicy(const json& manifest) {
  ROBOLOOP_ASSIGN_OR_RETURN(const json* policy, Typed(manifest, "policy", "", json::value_t::object));
  PolicySection section;
  ROBOLOOP_ASSIGN_OR_RETURN(section.kind, String(*policy, "kind", "policy"));
  absl::StatusOr<const PolicyKind*> kind = FindPolicyKind(section.kind);
  if (!kind.ok()) return FieldError("policy.kind", kind.status().message());
  ROBOLOOP_ASSIGN_OR_RETURN(const json* options, Typed(*policy, "options", "policy", json::value_t::object));
  section.options = *options;
  return section;
}

absl::Status CheckNormalization(const json& normalization) {
  static const std::set<std::string> kStats = {"mean", "std", "min", "max", "q01", "q99"};
  for (const auto& [feature, stats] : normalization.items()) {
    const std::string path = Child("normalization", feature);
    if (!stats.is_object()) return FieldError(path, "expected an object of statistics");
    for (const auto& [stat, values] : stats.items()) {
      const std::string stat_path = Child(path, stat);
      if (kStats.count(stat) == 0) {
        return FieldError(stat_path, absl::StrCat("unknown statistic; known: ", absl::StrJoin(kStats, ", ")));
      }
      bool ok = values.is_array();
      for (size_t i = 0; ok && i < values.size(); ++i) ok = values[i].is_number();
      if (!ok) return FieldError(stat_path, "expected an array of numbers");
    }
  }
  return absl::OkStatus();
}

absl::Status ReadActionChunk(const json& manifest, CheckpointManifest& out) {
  ROBOLOOP_ASSIGN_OR_RETURN(const json* chunk, Typed(manifest, "action_chunk", "", json::value_t::object));
  ROBOLOOP_ASSIGN_OR_RETURN(const json* horizon,
                            Typed(*chunk, "horizon", "action_chunk", json::value_t::number_integer));
  if (horizon->get<int64_t>() < 1) return FieldError("action_chunk.horizon", "must be >= 1");
  out.action_chunk_horizon = horizon->get<int64_t>();
  if (chunk->contains("execution")) {
    ROBOLOOP_ASSIGN_OR_RETURN(out.legacy_chunk_execution, String(*chunk, "execution", "action_chunk"));
    if (out.legacy_chunk_execution->empty()) return FieldError("action_chunk.execution", "must not be empty");
  }
  return absl::OkStatus();
}

absl::Status CheckMetrics(const json& metrics) {
  for (const auto& [name, value] : metrics.items()) {
    if (!value.is_number()) return FieldError(Child("metrics", name), "expected a number");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, std::string>> ReadLibraries(const json& libraries) {
  if (!libraries.is_object()) return FieldError("provenance.libraries", "expected an object");
  std::map<std::string, std::string> versions;
  for (const auto& [name, version] : libraries.items()) {
    if (!version.is_string()) return FieldError(Child("provenance.libraries", name), "expected a version string");
    versions[name] = version.get<std::string>();
  }
  return versions;
}

absl::StatusOr<Provenance> ReadProvenance(const json& manifest) {
  ROBOLOOP_ASSIGN_OR_RETURN(const json* json_provenance, Typed(manifest, "provenance", "", json::value_t::object));
  Provenance provenance;
  const std::pair<const char*, std::optional<std::string>*> fields[] = {
      {"roboloop_version", &provenance.roboloop_version},
      {"git_sha", &provenance.git_sha},
      {"host", &provenance.host},
      {"user", &provenance.user}};
  for (const auto& [key, field] : fields) {
    if (!json_provenance->contains(key)) continue;
    ROBOLOOP_ASSIGN_OR_RETURN(*field, String(*json_provenance, key, "provenance"));
  }
  auto libraries = json_provenance->find("libraries");
  if (libraries != json_provenance->end()) {
    ROBOLOOP_ASSIGN_OR_RETURN(provenance.libraries, ReadLibraries(*libraries));
  }
  return provenance;
}

absl::StatusOr<std::map<std::string, BlobDigest>> ReadBlobs(const json& manifest) {
  ROBOLOOP_ASSIGN_OR_RETURN(const json* blobs, Typed(manifest, "blobs", "", json::value_t::object));
  if (blobs->empty()) return FieldError("blobs", "must name at least one blob");
  std::map<std::string, BlobDigest> digests;
  for (const auto& [role, entry] : blobs->items()) {
    const std::string path = Child("blobs", role);
    const absl::Status role_ok = ValidateName("blob role", role);
    if (!role_ok.ok()) return FieldError(path, role_ok.message());
    if (!entry.is_object()) return FieldError(path, "expected {sha256, size}");
    BlobDigest digest;
    ROBOLOOP_ASSIGN_OR_RETURN(digest.sha256, String(entry, "sha256", path));
    if (!IsSha256Hex(digest.sha256)) return FieldError(Child(path, "sha256"), "expected 64 lowercase hex characters");
    ROBOLOOP_ASSIGN_OR_RETURN(digest.size, NonNegative(entry, "size", path));
    digests[role] = digest;
  }
  return digests;
}

absl::Status CheckTopLevelKeys(const json& manifest) {
  return CheckKnownKeys(manifest, "", {"format_version", "model", "policy", "obs_spec", "action_spec",
                                       "normalization", "action_chunk", "dataset_id", "parent_id", "step",
                                       "metrics", "blobs", "provenance"});
}

absl::Status CheckFormatVersion(const json& manifest) {
  ROBOLOOP_ASSIGN_OR_RETURN(const json* version, Typed(manifest, "format_version", "", json::value_t::number_integer));
  if (version->get<int64_t>() != kManifestFormatVersion) {
    return FieldError("format_version", absl::StrCat("unsupported version ", version->dump(),
                                                     "; this build reads ", kManifestFormatVersion));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadModel(const json& manifest) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::string model, String(manifest, "model", ""));
  const absl::Status name_ok = ValidateName("model", model);
  if (!name_ok.ok()) return FieldError("model", name_ok.message());
  return model;
}

absl::StatusOr<CheckpointManifest> Read(const json& root) {
  if (!root.is_object()) return absl::InvalidArgumentError("manifest must be a JSON object");
  ROBOLOOP_RETURN_IF_ERROR(CheckTopLevelKeys(root));
  ROBOLOOP_RETURN_IF_ERROR(CheckFormatVersion(root));
  CheckpointManifest manifest;
  ROBOLOOP_ASSIGN_OR_RETURN(manifest.model, ReadModel(root));
  ROBOLOOP_ASSIGN_OR_RETURN(manifest.step, NonNegative(root, "step", ""));
  ROBOLOOP_ASSIGN_OR_RETURN(manifest.policy, ReadPolicy(root));
  ROBOLOOP_ASSIGN_OR_RETURN(manifest.obs_spec, ReadArraySpecs(root, "obs_spec"));
  ROBOLOOP_ASSIGN_OR_RETURN(manifest.action_spec, ReadArraySpecs(root, "action_spec"));
  ROBOLOOP_ASSIGN_OR_RETURN(const json* normalization, Typed(root, "normalization", "", json::value_t::object));
  ROBOLOOP_RETURN_IF_ERROR(CheckNormalization(*normalization));
  manifest.normalization = *normalization;
  ROBOLOOP_RETURN_IF_ERROR(ReadActionChunk(root, manifest));
  ROBOLOOP_ASSIGN_OR_RETURN(manifest.dataset_id, OptionalId(root, "dataset_id"));
  ROBOLOOP_ASSIGN_OR_RETURN(manifest.parent_id, OptionalId(root, "parent_id"));
  ROBOLOOP_ASSIGN_OR_RETURN(const json* metrics, Typed(root, "metrics", "", json::value_t::object));
  ROBOLOOP_RETURN_IF_ERROR(CheckMetrics(*metrics));
  manifest.metrics = *metrics;
  ROBOLOOP_ASSIGN_OR_RETURN(manifest.provenance, ReadProvenance(root));
  ROBOLOOP_ASSIGN_OR_RETURN(manifest.blobs, ReadBlobs(root));
  return manifest;
}

json ArraySpecsJson(const ArraySpecs& specs) {
  json out = {{"names", specs.names}, {"shapes", specs.shapes}};
  if (specs.bounds.has_value()) out["bounds"] = *specs.bounds;
  if (!specs.cameras.empty()) {
    json cameras = json::array();
    for (const ManifestCamera& c : specs.cameras) {
      cameras.push_back({{"name", c.name}, {"camera", c.camera}, {"width", c.width}, {"height", c.height}});
    }
    out["cameras"] = std::move(cameras);
  }
  return out;
}

json ProvenanceJson(const Provenance& provenance) {
  json out = json::object();
  if (provenance.roboloop_version) out["roboloop_version"] = *provenance.roboloop_version;
  if (provenance.git_sha) out["git_sha"] = *provenance.git_sha;
  if (provenance.host) out["host"] = *provenance.host;
  if (provenance.user) out["user"] = *provenance.user;
  if (provenance.libraries) out["libraries"] = *provenance.libraries;
  return out;
}

}  // namespace

int64_t ArraySpecs::Floats() const {
  int64_t total = 0;
  for (const std::vector<int64_t>& shape : shapes) {
    int64_t size = 1;
    for (int64_t d : shape) size *= d;
    total += size;
  }
  return total;
}

absl::StatusOr<CheckpointManifest> CheckpointManifest::FromJson(const json& root) {
  try {
    return Read(root);
  } catch (const json::exception& error) {
    return absl::InvalidArgumentError(absl::StrCat("manifest is malformed: ", error.what()));
  }
}

absl::StatusOr<CheckpointManifest> CheckpointManifest::Parse(const std::string& text) {
  json parsed;
  try {
    parsed = json::parse(text);
  } catch (const json::exception& error) {
    return absl::InvalidArgumentError(absl::StrCat("manifest is not valid JSON: ", error.what()));
  }
  return FromJson(parsed);
}

json CheckpointManifest::ToJson() const {
  json chunk_json = {{"horizon", action_chunk_horizon}};
  if (legacy_chunk_execution) chunk_json["execution"] = *legacy_chunk_execution;
  json blob_json = json::object();
  for (const auto& [role, digest] : blobs) blob_json[role] = {{"sha256", digest.sha256}, {"size", digest.size}};
  return {
      {"format_version", kManifestFormatVersion},
      {"model", model},
      {"policy", {{"kind", policy.kind}, {"options", policy.options}}},
      {"obs_spec", ArraySpecsJson(obs_spec)},
      {"action_spec", ArraySpecsJson(action_spec)},
      {"normalization", normalization},
      {"action_chunk", chunk_json},
      {"dataset_id", dataset_id},
      {"parent_id", parent_id},
      {"step", step},
      {"metrics", metrics},
      {"blobs", blob_json},
      {"provenance", ProvenanceJson(provenance)},
  };
}

absl::StatusOr<const PolicyKind*> CheckpointManifest::Kind() const { return FindPolicyKind(policy.kind); }

absl::StatusOr<json> CheckpointManifest::CompleteOptions() const {
  ROBOLOOP_ASSIGN_OR_RETURN(const PolicyKind* kind, Kind());
  return CompletePolicyOptions(*kind, policy.options);
}

const BlobDigest* CheckpointManifest::Blob(const std::string& role) const {
  auto it = blobs.find(role);
  return it == blobs.end() ? nullptr : &it->second;
}

}  // namespace roboloop::registry
