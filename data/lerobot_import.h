// Import of LeRobot v3 datasets (parquet tables and mp4 videos) into the robomimic layout
// (docs/lerobot.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/cancellation.h"
#include "data/lineage.h"
#include "data/storage_options.h"

namespace roboloop::data {

// What to import and where.
struct LeRobotImportOptions {
  std::string input_dir;    // the LeRobot dataset folder (holding meta/info.json)
  std::string output_path;  // robomimic-layout file to write
  StorageOptions storage;   // chunking and compression of the output (image keys: ImageStorage())
  bool overwrite = false;   // replace an existing output file
  // An episode's rows are read and written in blocks of at most this size; the next block is read (videos decoded)
  // while one is written, so two blocks are held at a time.
  int64_t max_block_bytes = int64_t{64} << 20;
  // Once cancelled (may be null), the import stops between blocks with Cancelled and leaves no output file.
  const common::CancellationToken* cancel = nullptr;
};

// What an import produced.
struct LeRobotImportResult {
  int64_t num_episodes = 0;    // demos written (ascending episode_index becomes demo_<k>)
  int64_t total_steps = 0;     // steps over all demos
  int64_t frames_decoded = 0;  // video frames decoded over all cameras
  std::vector<std::string> features;  // "lerobot key -> robomimic feature" of every imported feature
  Lineage lineage;             // operation "import_lerobot", one "lerobot_file" parent per file
};

// Converts every episode of the LeRobot v3 dataset at `input_dir`: numeric features by
// FeatureNameOf (lerobot_format.h; action -> actions, next.reward -> rewards, next.done -> dones,
// states -> states, observation.<k> -> obs/<k>, others carried as obs/<key>), timestamp and task_index as
// obs/timestamp and obs/task_index, and each video feature decoded (FFmpeg) into
// obs/<camera>_image, uint8 [T, H, W, 3] RGB. The `data` env_args are those a roboloop export kept
// in info.json (lerobot::kEnvArgsField: env_name, env_kwargs), else env_name "lerobot"; without
// kept env_kwargs.obs_keys, obs_keys lists the observation.* numeric features. Under "lerobot" they record the fps, the
// robot type, the task strings, each episode's index and tasks and each feature's key, dtype,
// shape and names. Features of dtype image or string, or numeric features of rank above 1, are
// refused naming the feature. Errors name the file (info.json, a parquet table, a video) and
// what is wrong, e.g. an episode whose rows lie past its data table; on error or cancellation no
// output file is left behind and an earlier file at output_path stays as it was.
absl::StatusOr<LeRobotImportResult> ImportLeRobot(const LeRobotImportOptions& options);

// Imports the LeRobot folder `dir` once into `cache_dir`/lerobot-<digest>.hdf5, where digest is
// the folder's content digest (lerobot::FolderDigest), and returns that path; a file already
// there is reused, so an unchanged folder is imported once. Safe for processes (threads, ranks,
// nodes sharing `cache_dir`) importing at once: they take turns on an exclusive flock of
// <path>.lock (left in place), the first imports under a name of its own and renames it to
// <path>, the others then find <path>. The file is read-only (every write permission taken off,
// also off one an older version left writable), so that what later runs read is not edited by
// mistake; a deleted file is imported again. Errors as ImportLeRobot, and a lock file that cannot
// be created or locked.
absl::StatusOr<std::string> ImportLeRobotCached(const std::string& dir, const std::string& cache_dir);

}  // namespace roboloop::data
