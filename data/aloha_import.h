// Import of ALOHA/ACT episode folders into the robomimic layout.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "data/lineage.h"
#include "data/storage_options.h"

namespace roboloop::data {

// What to import and where.
struct AlohaImportOptions {
  std::string input_dir;    // folder holding episode_<i>.hdf5 files
  std::string output_path;  // robomimic-layout file to write
  std::string env_args_json = R"({"env_name": "aloha", "env_kwargs": {}})";  // `data` env_args
  StorageOptions storage;   // chunking and compression of the output
  bool overwrite = false;   // replace an existing output file
  int64_t max_block_bytes = int64_t{64} << 20;  // rows are copied in blocks of at most this size
};

// What an import produced.
struct AlohaImportResult {
  int64_t num_episodes = 0;  // demos written (episode_<i> in ascending i becomes demo_<k>)
  int64_t total_steps = 0;   // steps over all demos
  Lineage lineage;           // operation "import_aloha", one "aloha_episode" parent per file
};

// Converts every episode_<i>.hdf5 of `input_dir` (ascending i): `/action` -> actions,
// `/observations/qpos` -> obs/qpos, `/observations/qvel` -> obs/qvel and each
// `/observations/images/<cam>` (uint8 [T, H, W, 3], CheckImageFeature) -> obs/<cam>_image, stored
// one frame per chunk (ImageStorage(), whatever `storage` says). Rows are streamed in
// blocks; each source's path and sha256 are recorded in the lineage. Errors name the source
// file and the path inside it; on error no output file is left behind.
absl::StatusOr<AlohaImportResult> ImportAloha(const AlohaImportOptions& options);

}  // namespace roboloop::data
