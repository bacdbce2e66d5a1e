// bench/loader_bench: the image loader benchmark (issue 28, req 6). With --our-side it is one run of
// our loader, started by the benchmark itself in a process of its own.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "bench/loader_bench.h"

int main(int argc, char** argv) {
  roboloop::bench::LoaderBenchOptions options;
  roboloop::bench::LoaderSideOptions side;
  bool our_side = false;
  CLI::App app{"Image loader benchmark: roboloop's Loader vs PyTorch DataLoader over h5py"};
  app.add_option("--episodes", options.episodes, "Episodes written")->capture_default_str();
  app.add_option("--steps", options.steps, "Steps per episode")->capture_default_str();
  app.add_option("--side", options.side, "Camera height and width")->capture_default_str();
  app.add_option("--batch", options.batch, "Samples per batch")->capture_default_str();
  app.add_option("--workers", options.workers, "Loader workers on each side")->capture_default_str();
  app.add_option("--warmup", options.warmup, "Untimed batches per run")->capture_default_str();
  app.add_option("--batches", options.batches, "Timed batches per run")->capture_default_str();
  app.add_option("--runs", options.runs, "Alternating runs per side")->capture_default_str();
  app.add_option("--cache-mb", options.cache_mb, "Our episode cache in MB")->capture_default_str();
  app.add_option("--python", options.python, "The peer's Python interpreter");
  app.add_option("--work-dir", options.work_dir, "Scratch folder");
  app.add_option("--dataset", options.dataset, "A dataset this benchmark wrote before (not rewritten)");
  app.add_flag("--our-side", our_side, "Run our side once (what the benchmark starts)");
  app.add_option("--cameras", side.cameras, "With --our-side: comma-separated cameras");
  CLI11_PARSE(app, argc, argv);
  side.dataset = options.dataset;
  const absl::Status status = our_side ? roboloop::bench::RunOurLoaderSide(options, side)
                                       : roboloop::bench::RunLoaderBench(options);
  if (!status.ok()) {
    std::fprintf(stderr, "loader_bench: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
