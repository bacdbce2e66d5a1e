// One timed `data import lerobot` for bench/peers/lerobot_bench.py (issue 24, req 6): imports
// DIR into OUT and prints {"seconds", "frames", "episodes"} as JSON, the time covering the whole
// import (parquet reads, video decoding, HDF5 writing with the default storage: image keys
// deflated frame by frame, data/storage_options.h), not the process start.
#include <chrono>
#include <cstdio>

#include "data/lerobot_import.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: lerobot_import_bench DIR OUT.hdf5\n");
    return 2;
  }
  roboloop::data::LeRobotImportOptions options;
  options.input_dir = argv[1];
  options.output_path = argv[2];
  options.overwrite = true;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<roboloop::data::LeRobotImportResult> result = roboloop::data::ImportLeRobot(options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!result.ok()) {
    std::fprintf(stderr, "lerobot_import_bench: %s\n", std::string(result.status().message()).c_str());
    return 1;
  }
  std::printf("{\"seconds\": %.6f, \"frames\": %lld, \"episodes\": %lld}\n", seconds,
              static_cast<long long>(result->total_steps), static_cast<long long>(result->num_episodes));
  return 0;
}
