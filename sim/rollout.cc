#include "sim/rollout.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace roboloop::sim {

bool EpisodeRecord::SameOutcome(const EpisodeRecord& o) const {
  return task == o.task && seed == o.seed && episode_index == o.episode_index &&
         episode_return == o.episode_return && length == o.length && success == o.success &&
         end_reason == o.end_reason && end_detail == o.end_detail &&
         state_hash_chain == o.state_hash_chain && final_state_hash == o.final_state_hash;
}

absl::StatusOr<std::unique_ptr<RolloutEngine>> RolloutEngine::Create(const Task* task,
                                                                     const RolloutOptions& options) {
  ROBOLOOP_CHECK(task != nullptr);
  if (options.num_envs < 1) {
    return absl::InvalidArgumentError(absl::StrCat("envs must be >= 1, got ", options.num_envs));
  }
  if (options.num_episodes < 0 || options.first_episode < 0) {
    return absl::InvalidArgumentError("the episode range must not be negative");
  }
  ROBOLOOP_ASSIGN_OR_RETURN(auto pool, WorkerPool::Create({options.num_threads}));
  EnvOptions env_options;
  env_options.max_steps = options.max_steps;
  env_options.robustness = options.robustness;
  env_options.record_trajectory = options.record_trajectories;
  // No more envs than episodes: the rest would never run.
  const int num_envs = static_cast<int>(std::min<int64_t>(options.num_envs,
                                                          std::max<int64_t>(options.num_episodes, 1)));
  std::vector<std::unique_ptr<Env>> envs;
  for (int i = 0; i < num_envs; ++i) {
    ROBOLOOP_ASSIGN_OR_RETURN(auto env, Env::Create(task, env_options));
    envs.push_back(std::move(env));
  }
  return std::unique_ptr<RolloutEngine>(
      new RolloutEngine(task, options, std::move(envs), std::move(pool)));
}

RolloutEngine::RolloutEngine(const Task* task, const RolloutOptions& options,
                             std::vector<std::unique_ptr<Env>> envs,
                             std::unique_ptr<WorkerPool> pool)
    : task_(task),
      options_(options),
      envs_(std::move(envs)),
      pool_(std::move(pool)),
      obs_size_(task->obs_spec().size()),
      action_size_(task->action_spec().size()) {
  const size_t n = envs_.size();
  active_.reserve(n);
  slot_obs_.resize(n * obs_size_);
  batch_obs_.resize(n * obs_size_);
  batch_actions_.resize(n * action_size_);
  batch_episode_.resize(n);
  batch_step_.resize(n);
}

bool RolloutEngine::Cancelled() const {
  return options_.cancel != nullptr && options_.cancel->load(std::memory_order_relaxed);
}

absl::Status RolloutEngine::StartEpisode(int slot, int64_t episode_index) {
  return Annotate(envs_[slot]->Reset(EpisodeSeed(options_.base_seed, episode_index), episode_index,
                                     &slot_obs_[static_cast<size_t>(slot) * obs_size_]),
                  absl::StrCat("episode ", episode_index));
}

absl::Status RolloutEngine::StartInitialEpisodes() {
  const int64_t end = options_.first_episode + options_.num_episodes;
  next_episode_ = options_.first_episode;
  active_.clear();
  for (int slot = 0; slot < static_cast<int>(envs_.size()) && next_episode_ < end; ++slot) {
    ROBOLOOP_RETURN_IF_ERROR(StartEpisode(slot, next_episode_++));
    active_.push_back(slot);
  }
  return absl::OkStatus();
}

void RolloutEngine::GatherBatch() {
  for (size_t row = 0; row < active_.size(); ++row) {
    const int slot = active_[row];
    std::copy_n(&slot_obs_[static_cast<size_t>(slot) * obs_size_], obs_size_,
                &batch_obs_[row * obs_size_]);
    batch_episode_[row] = envs_[slot]->episode_index();
    batch_step_[row] = envs_[slot]->length();
  }
}

void RolloutEngine::StepBatch() {
  auto step_row = [this](int row) {
    const int slot = active_[row];
    envs_[slot]->Step(&batch_actions_[static_cast<size_t>(row) * action_size_], action_size_,
                      &slot_obs_[static_cast<size_t>(slot) * obs_size_]);
  };
  pool_->ParallelFor(static_cast<int>(active_.size()), step_row);
}

EpisodeRecord RolloutEngine::MakeRecord(const Env& env) const {
  EpisodeRecord record;
  record.task = task_->name();
  record.seed = env.seed();
  record.episode_index = env.episode_index();
  record.episode_return = env.episode_return();
  record.length = env.length();
  record.success = env.success();
  record.end_reason = env.end_reason();
  record.end_detail = env.end_detail();
  record.wall_time_s = env.wall_time_s();
  record.state_hash_chain = env.state_hash_chain();
  record.final_state_hash = env.current_state_hash();
  return record;
}

absl::Status RolloutEngine::CollectFinished(EpisodeSink& sink) {
  const int64_t end = options_.first_episode + options_.num_episodes;
  size_t kept = 0;
  for (size_t row = 0; row < active_.size(); ++row) {
    const int slot = active_[row];
    Env& env = *envs_[slot];
    if (env.done()) {
      ROBOLOOP_RETURN_IF_ERROR(sink.OnEpisode(
          MakeRecord(env), options_.record_trajectories ? &env.trajectory() : nullptr));
      if (next_episode_ >= end) continue;
      ROBOLOOP_RETURN_IF_ERROR(StartEpisode(slot, next_episode_++));
    }
    active_[kept++] = slot;
  }
  active_.resize(kept);
  return absl::OkStatus();
}

absl::Status RolloutEngine::Run(Policy& policy, EpisodeSink& sink) {
  const std::string who = absl::StrCat("policy ", policy.name(), " on task ", task_->name());
  ROBOLOOP_RETURN_IF_ERROR(CheckObsSpecMatches(task_->obs_spec(), policy.obs_spec(), who));
  ROBOLOOP_RETURN_IF_ERROR(CheckActionSpecMatches(task_->action_spec(), policy.action_spec(), who));
  ROBOLOOP_RETURN_IF_ERROR(StartInitialEpisodes());
  while (!active_.empty()) {
    if (Cancelled()) return absl::CancelledError("rollout cancelled");
    GatherBatch();
    PolicyBatch batch{batch_obs_.data(), batch_episode_.data(), batch_step_.data(),
                      static_cast<int>(active_.size())};
    ROBOLOOP_RETURN_IF_ERROR(Annotate(policy.Act(batch, batch_actions_.data()), who));
    StepBatch();
    ROBOLOOP_RETURN_IF_ERROR(CollectFinished(sink));
  }
  return absl::OkStatus();
}

namespace {
// Keeps every record, for RunRollout.
class CollectingSink : public EpisodeSink {
 public:
  absl::Status OnEpisode(const EpisodeRecord& record, const Trajectory*) override {
    records.push_back(record);
    return absl::OkStatus();
  }
  std::vector<EpisodeRecord> records;
};
}  // namespace

absl::StatusOr<std::vector<EpisodeRecord>> RunRollout(const Task& task, Policy& policy,
                                                      const RolloutOptions& options) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto engine, RolloutEngine::Create(&task, options));
  CollectingSink sink;
  ROBOLOOP_RETURN_IF_ERROR(engine->Run(policy, sink));
  std::sort(sink.records.begin(), sink.records.end(),
            [](const EpisodeRecord& a, const EpisodeRecord& b) {
              return a.episode_index < b.episode_index;
            });
  return std::move(sink.records);
}

}  // namespace roboloop::sim
