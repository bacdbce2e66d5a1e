// Expanding a training run's dataset into files, and the registry record of a set.
#include "train/dataset_set.h"

#include <glob.h>

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/fs.h"
#include "common/sha256.h"
#include "common/status.h"
#include "data/lerobot_runtime.h"

namespace roboloop::train {
namespace {

constexpr char kSetFormat[] = "dataset_set";

bool IsGlobPattern(const std::string& ref) { return ref.find_first_of("*?[") != std::string::npos; }

// The *.hdf5 files of folder `dir`, in name order.
absl::StatusOr<std::vector<std::string>> FolderFiles(const std::string& dir) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(dir));
  std::vector<std::string> files;
  for (const std::string& name : names) {
    const std::string path = JoinPath(dir, name);
    if (absl::EndsWith(name, ".hdf5") && std::filesystem::is_regular_file(path)) files.push_back(path);
  }
  if (files.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset folder ", dir, " has no *.hdf5 files and is no LeRobot dataset (no meta/info.json)"));
  }
  return files;
}

// The files `pattern` matches, in name order.
absl::StatusOr<std::vector<std::string>> GlobFiles(const std::string& pattern) {
  glob_t matches{};
  const int rc = glob(pattern.c_str(), 0, nullptr, &matches);
  std::vector<std::string> files(matches.gl_pathv, matches.gl_pathv + matches.gl_pathc);
  globfree(&matches);
  if (rc != 0 || files.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("dataset pattern '", pattern, "' matches no file"));
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The member ids of the registered set `set`, in order, from its blob.
absl::StatusOr<std::vector<std::string>> SetMembers(registry::RegistryClient& registry, const v1::Dataset& set,
                                                    const std::string& cache_dir) {
  const std::string where = absl::StrCat("dataset set ", set.name(), ":v", set.version());
  ROBOLOOP_ASSIGN_OR_RETURN(std::string path, registry.CachedCopy(set.blob().sha256(), cache_dir, ".json"));
  ROBOLOOP_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  const nlohmann::json blob = nlohmann::json::parse(text, nullptr, false);
  const nlohmann::json members = blob.is_object() ? blob.value("members", nlohmann::json()) : nlohmann::json();
  std::vector<std::string> ids;
  for (const nlohmann::json& id : members.is_array() ? members : nlohmann::json::array()) {
    if (id.is_string()) ids.push_back(id.get<std::string>());
  }
  if (ids.empty() || ids.size() != members.size()) {
    return absl::DataLossError(absl::StrCat(where, ": its blob is not {\"members\": [dataset id, ...]}"));
  }
  return ids;
}

// The registry dataset `ref`, or the members of the registered set it names, appended to `members`.
absl::Status ExpandRegistryRef(registry::RegistryClient& registry, const std::string& ref,
                               const std::string& cache_dir, const data::FileScreen& screen,
                               std::vector<ResolvedDataset>& members) {
  std::vector<std::string> refs = {ref};
  absl::StatusOr<v1::Dataset> dataset = registry.GetDataset(ref);
  if (!dataset.ok()) {
    return Annotate(dataset.status(), absl::StrCat("dataset ", ref, " (a registry reference: a file or folder is "
                                                   "named with a path, e.g. ./", ref, ")"));
  }
  if (IsDatasetSet(*dataset)) {
    ROBOLOOP_ASSIGN_OR_RETURN(refs, SetMembers(registry, *dataset, cache_dir));
  }
  for (const std::string& member : refs) {
    ROBOLOOP_ASSIGN_OR_RETURN(ResolvedDataset resolved, ResolveRegistryDataset(registry, member, cache_dir, screen));
    members.push_back(std::move(resolved));
  }
  return absl::OkStatus();
}

// The files the path `ref` names (a file, a folder's *.hdf5 files, a glob's matches), appended
// to `members`.
absl::Status ExpandPath(registry::RegistryClient& registry, const std::string& ref, bool register_files,
                        const data::FileScreen& screen, std::vector<ResolvedDataset>& members) {
  ROBOLOOP_ASSIGN_OR_RETURN(const std::vector<std::string> files, DatasetPathFiles(ref));
  for (const std::string& file : files) {
    ROBOLOOP_ASSIGN_OR_RETURN(ResolvedDataset resolved, ResolveDatasetFile(registry, file, register_files, screen));
    members.push_back(std::move(resolved));
  }
  return absl::OkStatus();
}

// Registers the set of `members` (blob DatasetSetBlob, id `id`) unless it is registered.
absl::Status RegisterSet(registry::RegistryClient& registry, const std::vector<ResolvedDataset>& members,
                         const std::vector<std::string>& ids, const std::string& id, const std::string& cache_dir) {
  if (registry.GetDataset(id).ok()) return absl::OkStatus();
  ROBOLOOP_RETURN_IF_ERROR(MakeDirs(cache_dir));
  const std::string blob_path = JoinPath(cache_dir, absl::StrCat(id, ".dataset_set.json"));
  ROBOLOOP_RETURN_IF_ERROR(WriteFileAtomic(blob_path, DatasetSetBlob(ids)));
  ROBOLOOP_ASSIGN_OR_RETURN(v1::BlobInfo blob, registry.UploadFile(blob_path));
  nlohmann::json sources = nlohmann::json::array();
  for (const ResolvedDataset& member : members) sources.push_back(member.path);
  v1::RegisterDatasetRequest request;
  request.set_name(members.front().name + "-set");
  request.set_blob_sha256(blob.sha256());
  request.set_metadata_json(
      nlohmann::json{{"format", kSetFormat}, {"num_members", members.size()}, {"sources", sources}}.dump());
  for (const std::string& member : ids) request.add_parent_refs(member);
  absl::StatusOr<v1::Dataset> registered = registry.RegisterDataset(request);
  return Annotate(registered.status(), absl::StrCat("registering the dataset set of ", members.front().path));
}

}  // namespace

std::vector<std::string> ResolvedDatasetSet::paths() const {
  std::vector<std::string> paths;
  for (const ResolvedDataset& member : members) paths.push_back(member.path);
  return paths;
}

std::string ResolvedDatasetSet::Describe() const {
  if (members.size() == 1) return members.front().path;
  const size_t more = members.size() - 1;
  return absl::StrCat(members.front().path, " (and ", more, more == 1 ? " more file" : " more files", " of its set)");
}

std::string DatasetSetBlob(const std::vector<std::string>& member_ids) {
  return nlohmann::json{{"dataset_set", 1}, {"members", member_ids}}.dump();
}

bool IsDatasetSet(const v1::Dataset& dataset) {
  const nlohmann::json metadata = nlohmann::json::parse(dataset.metadata_json(), nullptr, false);
  return metadata.is_object() && metadata.value("format", std::string()) == kSetFormat;
}

absl::StatusOr<ResolvedDatasetSet> ResolveDatasetSet(registry::RegistryClient& registry,
                                                     const std::vector<std::string>& refs,
                                                     const std::string& cache_dir, bool register_files,
                                                     const data::FileScreen& screen) {
  if (refs.empty()) return absl::InvalidArgumentError("training needs a dataset (path or reference)");
  ResolvedDatasetSet set;
  for (const std::string& ref : refs) {
    ROBOLOOP_RETURN_IF_ERROR(DatasetEntryIsPath(ref) ? ExpandPath(registry, ref, register_files, screen, set.members)
                                                     : ExpandRegistryRef(registry, ref, cache_dir, screen, set.members));
  }
  if (set.members.size() == 1) {
    set.id = set.members.front().id;
    return set;
  }
  std::vector<std::string> ids;
  for (const ResolvedDataset& member : set.members) ids.push_back(member.id);
  set.id = Sha256Hex(DatasetSetBlob(ids));
  if (register_files) ROBOLOOP_RETURN_IF_ERROR(RegisterSet(registry, set.members, ids, set.id, cache_dir));
  return set;
}

absl::Status RegisterDatasetSet(registry::RegistryClient& registry, const ResolvedDatasetSet& set,
                                const std::string& cache_dir) {
  std::vector<std::string> ids;
  for (const ResolvedDataset& member : set.members) {
    if (!registry.GetDataset(member.id).ok()) ROBOLOOP_RETURN_IF_ERROR(RegisterDatasetFile(registry, member.path));
    ids.push_back(member.id);
  }
  if (set.members.size() == 1) return absl::OkStatus();
  return RegisterSet(registry, set.members, ids, set.id, cache_dir);
}

absl::StatusOr<std::vector<std::string>> DatasetPathFiles(const std::string& entry) {
  if (std::filesystem::is_directory(entry)) return FolderFiles(entry);
  if (!PathExists(entry) && IsGlobPattern(entry)) return GlobFiles(entry);
  return std::vector<std::string>{entry};
}

std::vector<std::string> LocalDatasetFiles(const v1::TrainConfig& config) {
  std::vector<std::string> entries(config.datasets().begin(), config.datasets().end());
  if (!config.dataset().empty()) entries.insert(entries.begin(), config.dataset());
  std::vector<std::string> files;
  for (const std::string& entry : entries) {
    if (!DatasetEntryIsPath(entry)) continue;
    const absl::StatusOr<std::vector<std::string>> named = DatasetPathFiles(entry);
    if (named.ok()) files.insert(files.end(), named->begin(), named->end());
  }
  return files;
}

bool DatasetEntryIsPath(const std::string& dataset) {
  return absl::StrContains(dataset, '/') || IsGlobPattern(dataset) || absl::EndsWith(dataset, ".hdf5") ||
         absl::EndsWith(dataset, ".h5");
}

absl::Status MapDatasetEntries(v1::TrainConfig* config,
                               const std::function<absl::StatusOr<std::string>(const std::string&)>& map) {
  if (!config->dataset().empty()) {
    ROBOLOOP_ASSIGN_OR_RETURN(*config->mutable_dataset(), map(config->dataset()));
  }
  for (std::string& entry : *config->mutable_datasets()) {
    ROBOLOOP_ASSIGN_OR_RETURN(entry, map(entry));
  }
  return absl::OkStatus();
}

absl::Status RegisterLocalDatasets(registry::RegistryClient& registry, const std::string& cache_dir,
                                   v1::TrainConfig* config) {
  return MapDatasetEntries(config, [&](const std::string& entry) -> absl::StatusOr<std::string> {
    if (!DatasetEntryIsPath(entry) || data::IsLeRobotFolder(entry)) return entry;
    const bool present = PathExists(entry) || (IsGlobPattern(entry) && GlobFiles(entry).ok());
    if (!present) return entry;
    ROBOLOOP_ASSIGN_OR_RETURN(const ResolvedDatasetSet set,
                              ResolveDatasetSet(registry, {entry}, cache_dir, /*register_files=*/true));
    return set.id;
  });
}

}  // namespace roboloop::train
