// The image loader benchmark (issue 28, req 6): samples/s of roboloop's training Loader alone
// (streaming an 84x84 image dataset through a bounded episode cache, no training) against
// PyTorch's DataLoader over h5py (bench/peers/loader_peer.py) with the same workers and batch,
// one and two cameras, side by side and alternating; each side runs in a process of its own
// whose peak memory (the process and its children) is sampled beside its throughput.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace roboloop::bench {

struct LoaderBenchOptions {
  int episodes = 300;      // demos written
  int steps = 100;         // steps per demo
  int side = 84;           // camera height and width
  int history = 2;         // observation steps per sample
  int chunk = 8;           // actions per sample
  int batch = 64;          // samples per batch
  int workers = 2;         // loader worker threads (ours) and processes (the peer)
  int warmup = 10;         // untimed batches at the start of a run
  int batches = 150;       // timed batches per run
  int runs = 5;            // alternating runs per side and camera count
  double cache_mb = 256;   // our episode cache (the dataset is several times larger)
  std::string python;      // the peer's interpreter (default: the project's environment)
  std::string peer_script; // default: bench/peers/loader_peer.py
  std::string work_dir;    // scratch folder (default: a new one under /tmp)
  std::string dataset;     // an existing dataset written by this benchmark (skips writing)
};

// Writes the dataset (unless given), runs both sides and prints figures and settings to stdout.
absl::Status RunLoaderBench(const LoaderBenchOptions& options);

// Options of one side run: the dataset and the cameras it reads (comma-separated names).
struct LoaderSideOptions {
  std::string dataset;
  std::string cameras;
};

// Our side of one run, in the calling process: prints one JSON line with samples_per_s over
// options.batches batches after options.warmup untimed ones.
absl::Status RunOurLoaderSide(const LoaderBenchOptions& options, const LoaderSideOptions& side);

}  // namespace roboloop::bench
