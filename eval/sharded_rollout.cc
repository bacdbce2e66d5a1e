#include "eval/sharded_rollout.h"

#include <algorithm>
#include <deque>
#include <thread>

#include <spdlog/spdlog.h>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/status.h"

namespace roboloop::eval {
namespace {

// Errors every endpoint would answer alike: re-dispatching cannot help.
bool IsRequestError(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kUnimplemented:
      return true;
    default:
      return false;
  }
}

// The shared queue and results of one sharded rollout. Thread-safe.
class ShardedRun {
 public:
  ShardedRun(const v1::RolloutRequest& request, std::vector<Shard> shards, int endpoints,
             const ShardedRolloutOptions& options)
      : request_(request),
        shards_(std::move(shards)),
        options_(options),
        records_(shards_.size()),
        received_(shards_.size()),
        alive_(endpoints) {
    for (size_t i = 0; i < shards_.size(); ++i) pending_.push_back(static_cast<int>(i));
  }

  // Pulls shards for `endpoint` until none are left, the run fails, or the endpoint fails.
  void Serve(const Endpoint& endpoint) {
    while (true) {
      const int shard = NextShard();
      if (shard < 0) return;
      std::vector<v1::EpisodeRecord> records;
      const absl::Status status = endpoint.client->Rollout(ShardRequest(shard), [&](const v1::EpisodeRecord& r) {
        if (common::IsCancelled(options_.cancel) || stopped_.load()) {
          return absl::CancelledError("evaluation cancelled");
        }
        records.push_back(r);
        return Report(shard, r.success());
      });
      if (!Finish(endpoint, shard, status, std::move(records))) return;
    }
  }

  // Every record in episode order, or the run's error.
  absl::StatusOr<std::vector<v1::EpisodeRecord>> Result() {
    absl::MutexLock lock(&mu_);
    if (!error_.ok()) return error_;
    std::vector<v1::EpisodeRecord> all;
    for (std::vector<v1::EpisodeRecord>& shard : records_) {
      for (v1::EpisodeRecord& r : shard) all.push_back(std::move(r));
    }
    std::stable_sort(all.begin(), all.end(), [](const v1::EpisodeRecord& a, const v1::EpisodeRecord& b) {
      return a.episode_index() < b.episode_index();
    });
    return all;
  }

 private:
  v1::RolloutRequest ShardRequest(int shard) const {
    v1::RolloutRequest request = request_;
    request.set_first_episode(shards_[shard].first_episode);
    request.set_num_episodes(shards_[shard].num_episodes);
    return request;
  }

  // The next pending shard, waiting while other endpoints still run shards that may come back;
  // -1 when there is nothing left to do.
  int NextShard() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](ShardedRun* run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(run->mu_) {
          return !run->pending_.empty() || run->in_flight_ == 0 || !run->error_.ok();
        },
        this));
    if (!error_.ok() || pending_.empty()) return -1;
    const int shard = pending_.front();
    pending_.pop_front();
    ++in_flight_;
    return shard;
  }

  absl::Status Report(int shard, bool success) {
    // Counting and sending under progress_mu_ keeps the reports in order: two shards finishing
    // together must not send 12 done and then 11.
    absl::MutexLock ordered(&progress_mu_);
    ShardProgress progress;
    {
      absl::MutexLock lock(&mu_);
      received_[shard].episodes_done += 1;
      received_[shard].successes += success ? 1 : 0;
      for (const ShardProgress& p : received_) {
        progress.episodes_done += p.episodes_done;
        progress.successes += p.successes;
      }
    }
    if (!options_.on_progress) return absl::OkStatus();
    absl::Status status = options_.on_progress(progress);
    if (!status.ok()) {
      absl::MutexLock run_lock(&mu_);
      progress_error_ = status;
    }
    return status;
  }

  // Files a finished shard call; false when `endpoint` must stop serving.
  bool Finish(const Endpoint& endpoint, int shard, const absl::Status& status,
              std::vector<v1::EpisodeRecord> records) {
    absl::MutexLock lock(&mu_);
    --in_flight_;
    if (status.ok()) {
      records_[shard] = std::move(records);
      return true;
    }
    received_[shard] = ShardProgress();
    const bool cancelled = common::IsCancelled(options_.cancel);
    if (!progress_error_.ok() || cancelled || IsRequestError(status) || stopped_.load()) {
      stopped_.store(true);
      if (error_.ok()) {
        error_ = !progress_error_.ok() ? progress_error_
                 : cancelled           ? absl::CancelledError("evaluation cancelled")
                                       : Annotate(status, absl::StrCat("sim endpoint ", endpoint.name));
      }
      return false;
    }
    spdlog::warn("sim endpoint {} failed on episodes [{}, {}): {}; re-dispatching the shard", endpoint.name,
                 shards_[shard].first_episode, shards_[shard].first_episode + shards_[shard].num_episodes,
                 status.ToString());
    pending_.push_front(shard);
    if (options_.redispatched != nullptr) ++*options_.redispatched;
    if (--alive_ == 0 && error_.ok()) {
      stopped_.store(true);
      error_ = absl::UnavailableError(absl::StrCat("every sim endpoint failed; the last, ", endpoint.name,
                                                   ", with: ", status.ToString()));
    }
    return false;
  }

  const v1::RolloutRequest request_;
  const std::vector<Shard> shards_;
  const ShardedRolloutOptions options_;
  absl::Mutex mu_;
  std::deque<int> pending_ ABSL_GUARDED_BY(mu_);
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::vector<v1::EpisodeRecord>> records_ ABSL_GUARDED_BY(mu_);
  std::vector<ShardProgress> received_ ABSL_GUARDED_BY(mu_);
  int alive_ ABSL_GUARDED_BY(mu_);
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  absl::Status progress_error_ ABSL_GUARDED_BY(mu_);
  absl::Mutex progress_mu_ ABSL_ACQUIRED_BEFORE(mu_);  // orders the counting and on_progress calls
  std::atomic<bool> stopped_{false};  // the run failed: shards in flight stop
};

}  // namespace

std::vector<Shard> SplitSeedRange(int64_t start, int64_t count, int shards) {
  ROBOLOOP_CHECK(count >= 1 && shards >= 1);
  const int64_t n = std::min<int64_t>(shards, count);
  std::vector<Shard> out;
  int64_t next = start;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t size = count / n + (i < count % n ? 1 : 0);
    out.push_back(Shard{next, size});
    next += size;
  }
  return out;
}

absl::StatusOr<std::vector<v1::EpisodeRecord>> RunShardedRollout(const v1::RolloutRequest& request,
                                                                 const std::vector<Endpoint>& endpoints,
                                                                 const ShardedRolloutOptions& options) {
  if (endpoints.empty()) return absl::InvalidArgumentError("a sharded rollout needs at least one sim endpoint");
  if (request.num_episodes() < 1 || options.shards_per_endpoint < 1) {
    return absl::InvalidArgumentError("a sharded rollout needs >= 1 episode and >= 1 shard per endpoint");
  }
  const int shards = static_cast<int>(endpoints.size()) * options.shards_per_endpoint;
  ShardedRun run(request, SplitSeedRange(request.first_episode(), request.num_episodes(), shards),
                 static_cast<int>(endpoints.size()), options);
  std::vector<std::thread> workers;
  for (const Endpoint& endpoint : endpoints) workers.emplace_back([&run, &endpoint] { run.Serve(endpoint); });
  for (std::thread& worker : workers) worker.join();
  return run.Result();
}

}  // namespace roboloop::eval
