// The seed ranges a checkpoint's training data was collected with (issue 7, req 5): promotion
// requires an evaluation protocol whose seeds are disjoint from them.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "eval/protocol.h"
#include "registry/registry_client.h"

namespace roboloop::eval {

// Walks the checkpoint `ref`, its parent checkpoints (fine-tuning), their datasets and those
// datasets' parents (merges, DAgger relabels); downloads each dataset once into `cache_dir`
// (verified) and reads the seed range `sim collect` wrote into its env_args (env_kwargs
// base_seed, first_episode, num_episodes). Datasets without such a range (imports) add none.
// Each range is labelled "dataset <name>:v<version>". Errors name the reference or dataset.
absl::StatusOr<std::vector<SeedRange>> TrainingSeedRanges(registry::RegistryClient& registry,
                                                          const std::string& ref,
                                                          const std::string& cache_dir);

}  // namespace roboloop::eval
