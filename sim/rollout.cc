#include "sim/rollout.h"

#include <algorithm>
#include <utility>

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
      privileged_size_(task->privileged_spec().size()),
      action_size_(task->action_spec().size()),
      image_bytes_(task->obs_spec().image_bytes()) {
  const size_t n = envs_.size();
  slot_obs_.resize(n * obs_size_);
  slot_images_.resize(n * image_bytes_);
  renderers_.resize(pool_->num_threads());
  render_errors_.resize(pool_->num_threads());
  pool_->SetWorkerExitHook([this](int thread) { renderers_[thread].reset(); });
  const bool overlap = options_.overlap_inference && pool_->num_threads() > 1 && n > 1;
  groups_.resize(overlap ? 2 : 1);
  for (EnvGroup& group : groups_) {
    const size_t rows = (n + groups_.size() - 1) / groups_.size();
    group.active.reserve(rows);
    group.batch_obs.resize(rows * obs_size_);
    group.batch_privileged.resize(rows * privileged_size_);
    group.batch_images.resize(rows * image_bytes_);
    group.batch_actions.resize(rows * action_size_);
    group.batch_episode.resize(rows);
    group.batch_step.resize(rows);
  }
}

RolloutEngine::~RolloutEngine() { pool_.reset(); }

bool RolloutEngine::Cancelled() const {
  return common::IsCancelled(options_.cancel);
}

absl::Status RolloutEngine::StartEpisode(int slot, int64_t episode_index, int thread) {
  ROBOLOOP_RETURN_IF_ERROR(Annotate(envs_[slot]->Reset(EpisodeSeed(options_.base_seed, episode_index), episode_index,
                                                       &slot_obs_[static_cast<size_t>(slot) * obs_size_]),
                                    absl::StrCat("episode ", episode_index)));
  RenderSlot(slot, thread);
  return absl::OkStatus();
}

void RolloutEngine::RenderSlot(int slot, int thread) {
  if (image_bytes_ == 0 || !render_errors_[thread].ok()) return;
  std::unique_ptr<CameraRenderer>& renderer = renderers_[thread];
  if (renderer == nullptr) {
    absl::StatusOr<std::unique_ptr<CameraRenderer>> created =
        CameraRenderer::Create(task_->model(), task_->obs_spec().cameras, CameraRenderer::Options());
    if (!created.ok()) {
      render_errors_[thread] = Annotate(created.status(), absl::StrCat("task ", task_->name()));
      return;
    }
    renderer = *std::move(created);
  }
  Env& env = *envs_[slot];
  render_errors_[thread] = Annotate(
      renderer->Render(env.model(), env.data(), &slot_images_[static_cast<size_t>(slot) * image_bytes_]),
      absl::StrCat("task ", task_->name()));
}

absl::Status RolloutEngine::TakeRenderError() {
  for (absl::Status& error : render_errors_) {
    if (!error.ok()) return std::exchange(error, absl::OkStatus());
  }
  return absl::OkStatus();
}

absl::Status RolloutEngine::StartInitialEpisodes() {
  const int64_t end = options_.first_episode + options_.num_episodes;
  const int first_slots = static_cast<int>(
      std::min<int64_t>(static_cast<int64_t>(envs_.size()), end - options_.first_episode));
  std::vector<absl::Status> started(first_slots);
  auto reset_slot = [this, &started](int slot, int thread) {
    started[slot] = StartEpisode(slot, options_.first_episode + slot, thread);
  };
  pool_->ParallelFor(first_slots, reset_slot);
  for (const absl::Status& status : started) ROBOLOOP_RETURN_IF_ERROR(status);
  ROBOLOOP_RETURN_IF_ERROR(TakeRenderError());
  next_episode_ = options_.first_episode + first_slots;
  // Slots [0, n/2) form the first group, the rest the second.
  const size_t first_group_slots = envs_.size() / groups_.size();
  for (EnvGroup& group : groups_) group.active.clear();
  for (int slot = 0; slot < first_slots; ++slot) {
    groups_[static_cast<size_t>(slot) < first_group_slots ? 0 : groups_.size() - 1].active.push_back(slot);
  }
  return absl::OkStatus();
}

absl::Status RolloutEngine::Act(Policy& policy, EnvGroup& group, const std::string& who) {
  for (size_t row = 0; row < group.active.size(); ++row) {
    const int slot = group.active[row];
    std::copy_n(slot_obs_.data() + static_cast<size_t>(slot) * obs_size_, obs_size_,
                group.batch_obs.data() + row * obs_size_);
    std::copy_n(slot_images_.data() + static_cast<size_t>(slot) * image_bytes_, image_bytes_,
                group.batch_images.data() + row * image_bytes_);
    group.batch_episode[row] = envs_[slot]->episode_index();
    group.batch_step[row] = envs_[slot]->length();
    if (privileged_size_ > 0) {
      Env& env = *envs_[slot];
      task_->ObservePrivileged(env.model(), env.data(), &group.batch_privileged[row * privileged_size_]);
    }
  }
  PolicyBatch batch{group.batch_obs.data(), group.batch_episode.data(), group.batch_step.data(),
                    static_cast<int>(group.active.size())};
  if (image_bytes_ > 0) batch.images = group.batch_images.data();
  if (privileged_size_ > 0) batch.privileged = group.batch_privileged.data();
  return Annotate(policy.Act(batch, group.batch_actions.data()), who);
}

void RolloutEngine::StepRow::operator()(int row, int thread) const {
  const int slot = group->active[row];
  const size_t image_row = static_cast<size_t>(slot) * engine->image_bytes_;
  Env& env = *engine->envs_[slot];
  env.Step(&group->batch_actions[static_cast<size_t>(row) * engine->action_size_], engine->action_size_,
           &engine->slot_obs_[static_cast<size_t>(slot) * engine->obs_size_],
           engine->image_bytes_ > 0 ? &engine->slot_images_[image_row] : nullptr);
  // A finished episode's last state is never observed.
  if (!env.done()) engine->RenderSlot(slot, thread);
}

void RolloutEngine::StartStep(EnvGroup& group) {
  step_row_.group = &group;
  pool_->Start(static_cast<int>(group.active.size()), step_row_);
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

absl::Status RolloutEngine::RefuseInvalidTaskOutput(const Env& env) const {
  const EndReason end = env.end_reason();
  if (end == EndReason::kTaskError) {
    return absl::FailedPreconditionError(absl::StrCat("task ", task_->name(), " failed in episode ",
                                                      env.episode_index(), " (seed ", env.seed(), "): ",
                                                      env.end_detail(), "; the rollout stops"));
  }
  if (end != EndReason::kInvalidReward && end != EndReason::kInvalidObservation) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("task ", task_->name(), " returned a non-finite ",
                   end == EndReason::kInvalidReward ? "reward" : "observation", " in episode ", env.episode_index(),
                   " (seed ", env.seed(), "): ", env.end_detail(), "; the rollout stops"));
}

absl::Status RolloutEngine::CollectFinished(EnvGroup& group, Policy& policy, EpisodeSink& sink) {
  const int64_t end = options_.first_episode + options_.num_episodes;
  size_t kept = 0;
  for (size_t row = 0; row < group.active.size(); ++row) {
    const int slot = group.active[row];
    Env& env = *envs_[slot];
    if (env.done()) {
      ROBOLOOP_RETURN_IF_ERROR(RefuseInvalidTaskOutput(env));
      policy.EndEpisode(env.episode_index());
      ROBOLOOP_RETURN_IF_ERROR(sink.OnEpisode(
          MakeRecord(env), options_.record_trajectories ? &env.trajectory() : nullptr));
      if (next_episode_ >= end) continue;
      ROBOLOOP_RETURN_IF_ERROR(StartEpisode(slot, next_episode_++, /*thread=*/0));
      ROBOLOOP_RETURN_IF_ERROR(TakeRenderError());
    }
    group.active[kept++] = slot;
  }
  group.active.resize(kept);
  return absl::OkStatus();
}

absl::Status RolloutEngine::RunSerial(Policy& policy, EpisodeSink& sink, const std::string& who) {
  EnvGroup& group = groups_[0];
  while (!group.active.empty()) {
    if (Cancelled()) return absl::CancelledError("rollout cancelled");
    ROBOLOOP_RETURN_IF_ERROR(Act(policy, group, who));
    StartStep(group);
    pool_->Finish();
    ROBOLOOP_RETURN_IF_ERROR(TakeRenderError());
    ROBOLOOP_RETURN_IF_ERROR(CollectFinished(group, policy, sink));
  }
  return absl::OkStatus();
}

// Each turn steps the group whose actions are ready while the caller runs the policy on the
// other group, whose finished episodes were collected on the previous turn.
absl::Status RolloutEngine::RunOverlapped(Policy& policy, EpisodeSink& sink, const std::string& who) {
  if (!groups_[0].active.empty()) ROBOLOOP_RETURN_IF_ERROR(Act(policy, groups_[0], who));
  for (size_t turn = 0; !groups_[0].active.empty() || !groups_[1].active.empty(); turn ^= 1) {
    if (Cancelled()) return absl::CancelledError("rollout cancelled");
    EnvGroup& stepped = groups_[turn];
    EnvGroup& next = groups_[turn ^ 1];
    StartStep(stepped);
    const absl::Status acted = next.active.empty() ? absl::OkStatus() : Act(policy, next, who);
    pool_->Finish();
    ROBOLOOP_RETURN_IF_ERROR(acted);
    ROBOLOOP_RETURN_IF_ERROR(TakeRenderError());
    ROBOLOOP_RETURN_IF_ERROR(CollectFinished(stepped, policy, sink));
  }
  return absl::OkStatus();
}

absl::Status RolloutEngine::Run(Policy& policy, EpisodeSink& sink) {
  const std::string who = absl::StrCat("policy ", policy.name(), " on task ", task_->name());
  ROBOLOOP_RETURN_IF_ERROR(CheckObsSpecMatches(task_->obs_spec(), policy.obs_spec(), who));
  ROBOLOOP_RETURN_IF_ERROR(CheckActionSpecMatches(task_->action_spec(), policy.action_spec(), who));
  ROBOLOOP_RETURN_IF_ERROR(StartInitialEpisodes());
  return groups_.size() == 1 ? RunSerial(policy, sink, who) : RunOverlapped(policy, sink, who);
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
