// Export of robomimic-layout HDF5 datasets as LeRobot v3 datasets (docs/lerobot.md).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "common/cancellation.h"

namespace roboloop::data {

// What to export and how.
struct LeRobotExportOptions {
  std::string input_path;   // robomimic-layout HDF5 file
  std::string output_dir;   // the LeRobot dataset folder to write
  bool overwrite = false;   // replace an existing output folder
  // Frames per second; 0 = the file's (env_args lerobot.fps, an error where it has none); NaN,
  // infinite or negative: InvalidArgument.
  double fps = 0;
  std::string task = "roboloop demonstration";  // task string of demos without one
  std::string encoder = "libx264";  // FFmpeg video encoder: libx264 (H.264) or libaom-av1 (AV1)
  int crf = 18;             // the encoder's constant rate factor
  // A data file takes whole episodes until their columns hold this many MB (raw bytes, which
  // Parquet only shrinks); the next episode starts the next file (info.json data_files_size_in_mb).
  double data_file_mb = 100;
  // A camera's video file takes whole episodes until it is this many MB on disk; the next
  // episode starts the next file (info.json video_files_size_in_mb).
  double video_file_mb = 200;
  int64_t files_per_chunk = 1000;  // files per chunk-NNN folder (info.json chunks_size)
  // Once cancelled (may be null), the export stops between demos or video frames with Cancelled.
  const common::CancellationToken* cancel = nullptr;
};

// What an export wrote.
struct LeRobotExportResult {
  int64_t num_episodes = 0;    // one per demo, in demo order
  int64_t total_frames = 0;    // rows of the data table
  int64_t frames_encoded = 0;  // video frames over all cameras
};

// Writes `input_path` as a LeRobot v3.0 dataset: meta/info.json, meta/stats.json (mean, std,
// min, max, q01, q99, count of each numeric feature, data/stats.h), meta/tasks.parquet, meta/episodes/chunk-000/
// file-000.parquet, the data files data/chunk-CCC/file-FFF.parquet and per camera the videos
// videos/<key>/chunk-CCC/file-FFF.mp4 (yuv420p). Files roll over at episode boundaries by the
// size options, file n of a kind being chunk n / files_per_chunk, file n % files_per_chunk; the
// episodes table says where each episode is (and its time span in each video). Features map back by the file's env_args
// (a LeRobot import's keys, dtypes and names), else: actions -> action, rewards -> next.reward,
// dones -> next.done, obs/<camera>_image (uint8 [H, W, 3]) -> observation.images.<camera> (video),
// obs/timestamp and obs/task_index -> timestamp and task_index, states -> states,
// obs/<k> -> observation.<k>. info.json keeps the file's env_args but their "lerobot" part under
// lerobot::kEnvArgsField (its task and env_kwargs, which an import restores). next_obs/* features and numeric features of rank above 1 are
// refused by name, as is a size option that is not positive. The folder is written as
// `<output_dir>.partial-<uuid>` and renamed when complete; on error or cancellation it is removed and an earlier
// `output_dir` stays as it was. Errors name the input, feature or output file.
absl::StatusOr<LeRobotExportResult> ExportLeRobot(const LeRobotExportOptions& options);

}  // namespace roboloop::data
