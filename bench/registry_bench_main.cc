// bench/registry_bench: the registry benchmark as its own program (also `roboloop bench registry`).
#include <CLI/CLI.hpp>

#include <cstdio>

#include "bench/registry_bench.h"

int main(int argc, char** argv) {
  roboloop::bench::RegistryBenchOptions options;
  CLI::App app{"Registry benchmark: transfers vs cp+fsync+sha256sum, latency on a large catalog"};
  app.add_option("--file-mib", options.file_mib, "Size of the transferred file")->capture_default_str();
  app.add_option("--runs", options.runs, "Alternating runs per side")->capture_default_str();
  app.add_option("--catalog", options.catalog_size, "Checkpoints in the catalog")->capture_default_str();
  app.add_option("--clients", options.background_clients, "Concurrent registering clients")
      ->capture_default_str();
  app.add_option("--samples", options.latency_samples, "Timed calls of each kind")->capture_default_str();
  app.add_option("--work-dir", options.work_dir, "Scratch folder");
  app.add_option("--client-rate", options.background_rate,
                 "Registrations/s of each background client (0 = full speed)")->capture_default_str();
  app.add_flag("!--no-durable-commits", options.durable_commits,
               "Catalog commits with synchronous=NORMAL instead of FULL");
  CLI11_PARSE(app, argc, argv);
  absl::Status status = roboloop::bench::RunRegistryBench(options);
  if (!status.ok()) {
    std::fprintf(stderr, "registry_bench: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
