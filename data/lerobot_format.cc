#include "data/lerobot_format.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "common/fs.h"
#include "common/sha256.h"
#include "common/status.h"

namespace roboloop::data::lerobot {

const std::vector<std::string>& BookkeepingKeys() {
  static const std::vector<std::string> keys = {"timestamp", "frame_index", "episode_index", "index", "task_index"};
  return keys;
}

absl::StatusOr<nlohmann::json> ReadInfo(const std::string& dir) {
  const std::string path = JoinPath(dir, kInfoPath);
  if (!PathExists(path)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file (", dir, " is not a LeRobot dataset folder)"));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  nlohmann::json info = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!info.is_object()) return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON object"));
  const std::string version = info.value("codebase_version", "");
  if (!absl::StartsWith(version, "v3.")) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": codebase_version '", version,
        "'; only LeRobot v3.x datasets are read (convert older ones with LeRobot's convert_dataset_v21_to_v30)"));
  }
  if (!info.contains("fps") || !info["fps"].is_number() || info["fps"].get<double>() <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no positive 'fps'"));
  }
  if (!info.contains("features") || !info["features"].is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no 'features' object"));
  }
  return info;
}

std::string FormatPath(const std::string& path_template, int64_t chunk_index, int64_t file_index,
                       const std::string& video_key) {
  return absl::StrReplaceAll(path_template, {{"{chunk_index:03d}", absl::StrFormat("%03d", chunk_index)},
                                             {"{file_index:03d}", absl::StrFormat("%03d", file_index)},
                                             {"{video_key}", video_key}});
}

std::string FeatureNameOf(const std::string& key) {
  if (key == "action") return "actions";
  if (key == "next.reward") return "rewards";
  if (key == "next.done") return "dones";
  if (key == "states") return "states";  // what an export of robomimic `states` writes
  constexpr absl::string_view kObservation = "observation.";
  if (absl::StartsWith(key, kObservation)) return absl::StrCat("obs/", key.substr(kObservation.size()));
  return absl::StrCat("obs/", key);
}

std::string CameraNameOf(const std::string& key) {
  for (absl::string_view prefix : {"observation.images.", "observation."}) {
    if (absl::StartsWith(key, prefix)) return absl::StrReplaceAll(key.substr(prefix.size()), {{".", "_"}});
  }
  return absl::StrReplaceAll(key, {{".", "_"}});
}

absl::StatusOr<std::string> FolderDigest(const std::string& dir,
                                         std::vector<std::pair<std::string, std::string>>* file_digests) {
  std::vector<std::string> files;
  std::error_code error;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, error);
       !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    if (it->is_regular_file()) files.push_back(std::filesystem::relative(it->path(), dir).string());
  }
  if (error) return ErrnoStatus(error.value(), dir);
  std::sort(files.begin(), files.end());
  std::string listing;
  for (const std::string& file : files) {
    ROBOLOOP_ASSIGN_OR_RETURN(std::string sha256, Sha256File(JoinPath(dir, file)));
    absl::StrAppend(&listing, file, "\t", sha256, "\n");
    if (file_digests != nullptr) file_digests->emplace_back(file, sha256);
  }
  return Sha256Hex(listing);
}

}  // namespace roboloop::data::lerobot
