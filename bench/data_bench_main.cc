// bench/data_bench: the dataset benchmark as its own program (also `roboloop bench data`).
#include <CLI/CLI.hpp>

#include <cstdio>

#include "bench/data_bench.h"

int main(int argc, char** argv) {
  roboloop::bench::DataBenchOptions options;
  CLI::App app{"Dataset benchmark: HDF5 write/load vs cp + sha256sum of the raw bytes"};
  app.add_option("--episodes", options.episodes, "Episodes")->capture_default_str();
  app.add_option("--steps", options.steps, "Steps per episode")->capture_default_str();
  app.add_option("--runs", options.runs, "Alternating runs per side")->capture_default_str();
  app.add_option("--work-dir", options.work_dir, "Scratch folder");
  CLI11_PARSE(app, argc, argv);
  absl::Status status = roboloop::bench::RunDataBench(options);
  if (!status.ok()) {
    std::fprintf(stderr, "data_bench: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
