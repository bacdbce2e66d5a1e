// The registry benchmark (issue 2, req 10): blob upload/download through RegistryService on
// loopback against `cp` + fsync + `sha256sum` of the same file, and register/list latency on
// a large catalog while other clients register concurrently.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace roboloop::bench {

struct RegistryBenchOptions {
  int file_mib = 512;            // size of the random file moved through the service
  int runs = 5;                  // alternating runs of each side
  int catalog_size = 100000;     // checkpoints registered before latencies are measured
  int background_clients = 4;    // clients registering while latencies are measured
  double background_rate = 0;    // registrations/s of each background client; 0 = flat out
  int latency_samples = 2000;    // timed register calls and list calls each
  bool durable_commits = true;   // catalog synchronous=FULL (the default) or NORMAL
  std::string work_dir;          // scratch folder (default: a new one under /tmp)
};

// Runs the benchmark and prints its report (figures and settings) to stdout.
absl::Status RunRegistryBench(const RegistryBenchOptions& options);

}  // namespace roboloop::bench
