// The simulation seeds a dataset's episodes were collected on, as its env_args record them, so that an
// evaluation can be checked for overlap with what a policy was trained on (eval/training_seeds.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace roboloop::data {

// Episodes [first_episode, first_episode + num_episodes) of the seed sequence of `base_seed`.
struct CollectSeedRange {
  uint64_t base_seed = 0;
  int64_t first_episode = 0;
  int64_t num_episodes = 0;

  bool operator==(const CollectSeedRange& other) const {
    return base_seed == other.base_seed && first_episode == other.first_episode && num_episodes == other.num_episodes;
  }
};

// The ranges `env_args_json` records in its env_kwargs: their own (base_seed, first_episode, num_episodes; a
// collect writes them) and each entry of env_kwargs.seed_ranges (a merge writes those, one per input range).
// Empty when it records none; InvalidArgument naming the key when a recorded range is malformed.
absl::StatusOr<std::vector<CollectSeedRange>> RecordedSeedRanges(const std::string& env_args_json);

// The env_args of a merge of files of one task whose env_args are `inputs` (first first): the first's, with
// env_kwargs.seed_ranges listing every input's recorded ranges once, in order, and the single-range keys removed,
// since they would name the first input's seeds only. The first's env_args unchanged when no input records a range
// or they are not a JSON object; InvalidArgument when a recorded range is malformed or the first's env_kwargs is
// not an object.
absl::StatusOr<std::string> MergedEnvArgs(const std::vector<std::string>& inputs);

}  // namespace roboloop::data
