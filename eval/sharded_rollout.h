// A rollout split into shards of its seed range over several SimService endpoints (issue 7,
// req 4): each endpoint pulls shards; a shard whose endpoint fails or disconnects goes back to
// the queue for another endpoint, its partial episodes discarded. Because episode i depends only
// on (task, options, base seed, i, policy), the assembled records equal a one-endpoint run.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/cancellation.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "roboloop/v1/sim.pb.h"
#include "sim/sim_client.h"

namespace roboloop::eval {

// One contiguous part of a seed range.
struct Shard {
  int64_t first_episode = 0;  // first episode index
  int64_t num_episodes = 0;   // episodes (>= 1)
};

// Splits [start, start + count) into min(shards, count) contiguous shards whose sizes differ
// by at most one, in order. `count` >= 1 and `shards` >= 1.
std::vector<Shard> SplitSeedRange(int64_t start, int64_t count, int shards);

// Running totals of a sharded rollout (in-flight shards included; they drop when a shard is
// re-dispatched).
struct ShardProgress {
  int64_t episodes_done = 0;  // records received
  int64_t successes = 0;      // successful ones among them
};

// A SimService endpoint and its name for messages.
struct Endpoint {
  std::string name;                   // how errors name it: its address or a display name
  const sim::SimClient* client;       // not owned
};

// How a sharded rollout runs.
struct ShardedRolloutOptions {
  int shards_per_endpoint = 2;                  // the range is split into endpoints x this many shards
  const common::CancellationToken* cancel = nullptr;    // once cancelled, the rollout stops (Cancelled)
  std::atomic<int>* redispatched = nullptr;     // incremented per re-dispatched shard (may be null)
  // Called after each received record, from the endpoints' threads, one call at a time; an error
  // stops the rollout and is returned.
  std::function<absl::Status(const ShardProgress&)> on_progress;
};

// Runs `request`'s seed range over `endpoints` (at least one) and returns every record sorted
// by episode index. Errors that any endpoint would repeat (invalid request, unknown task or
// checkpoint, specs that do not fit) stop the rollout and are returned annotated with the
// endpoint; any other failure of an endpoint retires it and re-dispatches its shard.
// Unavailable naming the last failure when every endpoint has failed.
absl::StatusOr<std::vector<v1::EpisodeRecord>> RunShardedRollout(const v1::RolloutRequest& request,
                                                                 const std::vector<Endpoint>& endpoints,
                                                                 const ShardedRolloutOptions& options);

}  // namespace roboloop::eval
