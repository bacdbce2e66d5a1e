// One training job as the `roboloop train` worker takes it (issue 27): the struct TrainService
// fills, the one function that turns it into the worker's command line, and the one that adds
// the worker's flags to a CLI11 command. Both walk the same flag table, so the service and the
// CLI cannot drift apart: a renamed flag is renamed for both. Torch-free.
#pragma once

#include <string>
#include <vector>

#include "roboloop/v1/train.pb.h"

namespace CLI {
class App;
}  // namespace CLI

namespace roboloop::train {

// The subcommand of `roboloop` that runs a TrainJob.
inline constexpr char kTrainSubcommand[] = "train";

// The most local ranks one `roboloop train` starts (--nproc-per-node): far more than any node's
// cores or GPUs, few enough that a typo cannot start thousands of processes.
inline constexpr int kMaxLocalRanks = 256;

// Everything a `roboloop train` process needs. Zero/empty fields are the defaults.
struct TrainJob {
  std::string config_path;             // YAML (or JSON) TrainConfig; "" = flags only
  v1::TrainConfig overrides;           // set fields override the file's
  int nproc_per_node = 1;              // local ranks started by the launcher
  std::string root = ".roboloop";      // state folder; the embedded registry's store
  std::string registry_address;        // remote registry HOST:PORT or unix:PATH; "" = embedded
  std::string registry_token_file;     // bearer token file for the remote registry
  std::string registry_tls_ca_file;    // PEM roots for the remote registry; set = TLS
  std::string registry_tls_server_name;  // name expected in the registry's certificate
  std::string run_id;                  // "" = a new one (or ROBOLOOP_RUN_ID of a launcher)
  int progress_fd = -1;                // rank 0 writes TrainEvents here (train_progress.h); -1 = none
  int exit_with_parent = 0;            // pid of the caller: stop (SIGTERM) when it dies; 0 = never
};

// The command line that runs `job`: {program, "train", flags...}. A flag is given only when
// its field differs from a default-constructed TrainJob's.
std::vector<std::string> TrainJobArgv(const std::string& program, const TrainJob& job);

// Adds the positional config and every flag of TrainJobArgv to `command`; parsing fills `*job`
// (which must outlive the parse). Malformed numbers and numbers out of the flag's range (zero or
// negative counts, steps and rates; NaN or infinite values; --nproc-per-node above kMaxLocalRanks)
// are CLI::ValidationError naming the flag.
void AddTrainJobFlags(CLI::App* command, TrainJob* job);

}  // namespace roboloop::train
