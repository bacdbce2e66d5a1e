// The LeRobot v3 dataset layout shared by import and export (docs/lerobot.md): info.json, path
// templates, how LeRobot feature keys map to robomimic feature names, and a folder's digest.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace roboloop::data::lerobot {

inline constexpr char kInfoPath[] = "meta/info.json";
inline constexpr char kTasksPath[] = "meta/tasks.parquet";
inline constexpr char kEpisodesDir[] = "meta/episodes";
inline constexpr char kDataPathTemplate[] = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet";
inline constexpr char kVideoPathTemplate[] =
    "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4";
// The info.json field where an export keeps the file's env_args (without their "lerobot" part) for an import to
// restore: its task (env_name) and env_kwargs (obs_keys order, cameras, how it was collected).
inline constexpr char kEnvArgsField[] = "roboloop_env_args";
// LeRobot's timestamp tolerance: a frame is the one within this many seconds of its time.
inline constexpr double kTimestampToleranceS = 1e-4;
// The columns LeRobot adds to every data table; import derives them, export writes them.
const std::vector<std::string>& BookkeepingKeys();

// Reads DIR/meta/info.json and checks it is v3.x with fps and features; errors name the file.
absl::StatusOr<nlohmann::json> ReadInfo(const std::string& dir);

// Fills a path template of info.json (data_path, video_path): "{chunk_index:03d}",
// "{file_index:03d}" and "{video_key}".
std::string FormatPath(const std::string& path_template, int64_t chunk_index, int64_t file_index,
                       const std::string& video_key = "");

// The robomimic feature a LeRobot key of a numeric feature becomes: "action" -> "actions",
// "next.reward" -> "rewards", "next.done" -> "dones", "states" -> "states",
// "observation.<k>" -> "obs/<k>", any other
// key -> "obs/<key>" (carried, e.g. "obs/next.success").
std::string FeatureNameOf(const std::string& key);

// The camera name of a video key ("observation.images.front" -> "front"), whose frames are the
// robomimic feature "obs/<camera>_image" (docs/vision.md).
std::string CameraNameOf(const std::string& key);

// sha256 (hex) over the sorted relative paths and sha256 of every regular file under `dir`: the
// folder's content digest. `file_digests` receives (path, sha256) of each file when not null.
absl::StatusOr<std::string> FolderDigest(const std::string& dir,
                                         std::vector<std::pair<std::string, std::string>>* file_digests);

}  // namespace roboloop::data::lerobot
