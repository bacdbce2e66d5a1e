#include "sim/replay.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "sim/rng.h"

namespace roboloop::sim {
namespace {

// The first deterministic field in which `actual` differs from `expected`, or OK.
absl::Status FirstDifference(const EpisodeRecord& expected, const EpisodeRecord& actual) {
  auto differs = [&](const char* field, auto want, auto got) {
    return absl::DataLossError(absl::StrCat("replay of episode ", expected.episode_index,
                                            " differs in ", field, ": recorded ", want,
                                            ", replayed ", got));
  };
  if (actual.state_hash_chain != expected.state_hash_chain) {
    return differs("state_hash_chain", expected.state_hash_chain, actual.state_hash_chain);
  }
  if (actual.final_state_hash != expected.final_state_hash) {
    return differs("final_state_hash", expected.final_state_hash, actual.final_state_hash);
  }
  if (actual.length != expected.length) return differs("length", expected.length, actual.length);
  if (actual.end_reason != expected.end_reason) {
    return differs("end_reason", EndReasonName(expected.end_reason), EndReasonName(actual.end_reason));
  }
  if (actual.end_detail != expected.end_detail) {
    return differs("end_detail", expected.end_detail, actual.end_detail);
  }
  if (actual.episode_return != expected.episode_return) {
    return differs("episode_return", expected.episode_return, actual.episode_return);
  }
  if (actual.success != expected.success) return differs("success", expected.success, actual.success);
  return absl::OkStatus();
}

}  // namespace

absl::Status ReplayEpisode(const Task& task, Policy& policy, const RolloutOptions& options,
                           const EpisodeRecord& expected) {
  if (expected.task != task.name()) {
    return absl::InvalidArgumentError(absl::StrCat("the record is of task '", expected.task,
                                                   "', not of '", task.name(), "'"));
  }
  if (expected.episode_index < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("the record has a negative episode index ", expected.episode_index));
  }
  if (EpisodeSeed(options.base_seed, expected.episode_index) != expected.seed) {
    return absl::InvalidArgumentError(absl::StrCat(
        "episode ", expected.episode_index, " has seed ", expected.seed,
        ", which base seed ", options.base_seed, " does not give: replay with the recording's base seed"));
  }
  RolloutOptions single = options;
  single.first_episode = expected.episode_index;
  single.num_episodes = 1;
  single.num_envs = 1;
  single.num_threads = 1;
  single.record_trajectories = false;
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<EpisodeRecord> records, RunRollout(task, policy, single));
  ROBOLOOP_CHECK(records.size() == 1);
  return FirstDifference(expected, records.front());
}

}  // namespace roboloop::sim
