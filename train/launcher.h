// Local data-parallel launch (issue 6, req 4): `roboloop train --nproc-per-node N` re-runs
// its own command line N times with torchrun's variables set, so local ranks, torchrun,
// Slurm and Kubernetes PyTorchJob all reach the same code path (train/train_run.h
// RankInfoFromEnvironment). Torch-free.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace roboloop::train {

// How to start the ranks.
struct LaunchOptions {
  std::vector<std::string> argv;          // the command each rank runs (argv[0] = program)
  int nproc = 1;                          // ranks on this node
  std::string master_addr = "127.0.0.1";  // rendezvous host
  int master_port = 0;                    // rendezvous port; 0 = a free port
  std::vector<std::string> extra_env;     // more NAME=VALUE for every rank
  double grace_seconds = 15;              // after a rank fails, time the others get to exit
  int cancelled_exit_code = -1;           // a rank's exit code that means "cancelled"; -1 = none
};

// A free TCP port on 127.0.0.1 (bound and released; may be taken again by another process).
absl::StatusOr<int> FreeLocalPort();

// Starts the ranks, forwards SIGINT/SIGTERM to them, and waits. When a rank fails the others
// are given `grace_seconds` to notice (they normally fail fast on the broken collective)
// before being terminated. The ranks record why they failed (train/rank_failure.h) in a
// temporary folder named by $ROBOLOOP_RANK_FAILURE_DIR. OK when every rank exits 0; CANCELLED
// "training cancelled" when a signal was forwarded and a rank exited `cancelled_exit_code`
// (rank 0 said where to resume) or failed; otherwise ABORTED "training failed: rank R of N
// exited with code C: <R's error>; then, as a consequence, rank S exited with code D", where R
// is the rank whose failure came first on its own (a peer's broken collective does not count;
// without records, the first to exit) and the others that failed follow.
absl::Status LaunchLocalRanks(const LaunchOptions& options);

}  // namespace roboloop::train
