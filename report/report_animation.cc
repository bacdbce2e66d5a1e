#include "report/report_animation.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "eval/eval_service.h"
#include "sim/checkpoint_policy.h"
#include "sim/render.h"
#include "sim/rollout.h"
#include "sim/sim_service.h"

namespace roboloop::report {
namespace {

// Keeps the states of the one episode a rollout runs.
class StatesSink : public sim::EpisodeSink {
 public:
  absl::Status OnEpisode(const sim::EpisodeRecord& record, const sim::Trajectory* trajectory) override {
    record_ = record;
    if (trajectory != nullptr) states_ = trajectory->states;
    return absl::OkStatus();
  }
  const sim::EpisodeRecord& record() const { return record_; }
  const std::vector<double>& states() const { return states_; }

 private:
  sim::EpisodeRecord record_;
  std::vector<double> states_;
};

absl::StatusOr<EpisodeAnimation> Animate(const sim::Task& task, sim::Policy& policy, const v1::Protocol& protocol,
                                         const v1::EpisodeResult& episode, const std::string& label,
                                         const AnimationOptions& options) {
  sim::RolloutOptions rollout;
  rollout.base_seed = protocol.base_seed();
  rollout.first_episode = episode.episode_index();
  rollout.num_episodes = 1;
  rollout.max_steps = protocol.max_steps();
  rollout.record_trajectories = true;
  rollout.robustness = sim::RobustnessFromProto(protocol.robustness());
  ROBOLOOP_ASSIGN_OR_RETURN(auto engine, sim::RolloutEngine::Create(&task, rollout));
  StatesSink sink;
  ROBOLOOP_RETURN_IF_ERROR(engine->Run(policy, sink));
  if (sink.record().episode_return != episode.episode_return()) {
    return absl::DataLossError(absl::StrCat("re-running episode ", episode.episode_index(), " returned ",
                                            sink.record().episode_return, ", the evaluation stored ",
                                            episode.episode_return()));
  }
  EpisodeAnimation animation;
  animation.label = label;
  animation.episode_index = episode.episode_index();
  animation.episode_return = episode.episode_return();
  animation.success = episode.success();
  ROBOLOOP_ASSIGN_OR_RETURN(animation.frames,
                            sim::RenderStatesAsPng(task.model(), sink.states(), options.max_frames, sim::RenderOptions()));
  for (const sim::CameraSpec& camera : task.obs_spec().cameras) {
    CameraAnimation view{camera.name, camera.width, camera.height, {}};
    ROBOLOOP_ASSIGN_OR_RETURN(view.frames,
                              sim::RenderCameraStatesAsPng(task, camera.name, sink.states(), options.max_frames));
    animation.cameras.push_back(std::move(view));
  }
  return animation;
}

}  // namespace

absl::StatusOr<std::vector<EpisodeAnimation>> AnimateBestAndWorst(registry::RegistryClient& registry,
                                                                  const v1::Evaluation& evaluation,
                                                                  const AnimationOptions& options) {
  if (evaluation.episodes().empty()) {
    return absl::InvalidArgumentError(absl::StrCat("evaluation ", evaluation.id(), " carries no episodes"));
  }
  const v1::Protocol& protocol = evaluation.protocol();
  ROBOLOOP_ASSIGN_OR_RETURN(auto task, options.tasks->Create(protocol.task()));
  sim::CheckpointPolicyOptions policy_options;
  policy_options.cache_dir = options.cache_dir;
  ROBOLOOP_ASSIGN_OR_RETURN(std::string chunk, eval::ChunkExecutionText(protocol.execution().chunk()));
  ROBOLOOP_ASSIGN_OR_RETURN(policy_options.execution, sim::ParseChunkExecution(chunk));
  policy_options.batch_invariant = !protocol.execution().has_batch_invariant() || protocol.execution().batch_invariant();
  ROBOLOOP_ASSIGN_OR_RETURN(auto policy, sim::LoadCheckpointPolicy(registry, evaluation.checkpoint_id(), policy_options,
                                                                   task->obs_spec(), task->action_spec()));
  auto by_return = [](const v1::EpisodeResult& a, const v1::EpisodeResult& b) {
    return a.episode_return() < b.episode_return();
  };
  const auto& episodes = evaluation.episodes();
  const v1::EpisodeResult& best = *std::max_element(episodes.begin(), episodes.end(), by_return);
  const v1::EpisodeResult& worst = *std::min_element(episodes.begin(), episodes.end(), by_return);
  std::vector<EpisodeAnimation> animations;
  for (const auto& [episode, label] : {std::make_pair(&best, "best"), std::make_pair(&worst, "worst")}) {
    ROBOLOOP_ASSIGN_OR_RETURN(EpisodeAnimation animation, Animate(*task, *policy, protocol, *episode, label, options));
    animations.push_back(std::move(animation));
  }
  return animations;
}

}  // namespace roboloop::report
