#include "bench/sim_policy_bench.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>

#include "absl/strings/str_cat.h"
#include "bench/bench_stats.h"
#include "bench/rollout_anchor.h"
#include "common/fs.h"
#include "common/status.h"
#include "sim/builtin_tasks.h"
#include "sim/checkpoint_policy.h"
#include "sim/rollout.h"
#include "sim/task_registry.h"
#include "train/safetensors.h"

namespace roboloop::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Wraps a policy and adds up the wall time spent in Act.
class TimedPolicy : public sim::Policy {
 public:
  explicit TimedPolicy(sim::Policy* inner) : inner_(inner) {}
  std::string name() const override { return inner_->name(); }
  const sim::ObsSpec& obs_spec() const override { return inner_->obs_spec(); }
  const sim::ActionSpec& action_spec() const override { return inner_->action_spec(); }
  absl::Status Act(const sim::PolicyBatch& batch, float* actions) override {
    const auto start = Clock::now();
    absl::Status status = inner_->Act(batch, actions);
    seconds_ += std::chrono::duration<double>(Clock::now() - start).count();
    return status;
  }
  void EndEpisode(int64_t episode_index) override { inner_->EndEpisode(episode_index); }
  double seconds() const { return seconds_; }
  void Reset() { seconds_ = 0; }

 private:
  sim::Policy* inner_;
  double seconds_ = 0;
};

// Counts the env steps of the finished episodes.
class StepCountingSink : public sim::EpisodeSink {
 public:
  absl::Status OnEpisode(const sim::EpisodeRecord& record, const sim::Trajectory*) override {
    steps_ += record.length;
    return absl::OkStatus();
  }
  int64_t steps() const { return steps_; }

 private:
  int64_t steps_ = 0;
};

// Scale of the action layer's weights relative to the hidden layers', as policy heads are
// initialised in PPO-style code: actions stay near the centre of the range (like testspeed's
// 0.01 control noise) instead of saturating, which would hold reacher's elbow at its joint
// limit and make MuJoCo's constraint solver run on our side only.
constexpr float kActionLayerGain = 0.01f;

// A seeded MLP obs -> hidden -> hidden -> action ("mlp" kind, layers.<i>.{weight,bias}).
absl::StatusOr<sim::PolicyFile> WriteRandomMlp(const std::string& path, int64_t obs, int64_t hidden,
                                                int64_t action) {
  const std::vector<int64_t> widths = {obs, hidden, hidden, action};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  train::TensorMap tensors;
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    train::FloatTensor weight{{widths[i + 1], widths[i]}, {}}, bias{{widths[i + 1]}, {}};
    const float gain = i + 2 == widths.size() ? kActionLayerGain : 1.0f;
    const float scale = gain / std::sqrt(static_cast<float>(widths[i]));
    for (int64_t k = 0; k < widths[i + 1] * widths[i]; ++k) weight.values.push_back(scale * uniform(rng));
    bias.values.assign(widths[i + 1], 0.0f);
    tensors[absl::StrCat("layers.", i, ".weight")] = weight;
    tensors[absl::StrCat("layers.", i, ".bias")] = bias;
  }
  ROBOLOOP_RETURN_IF_ERROR(train::WriteSafetensors(path, tensors));
  const nlohmann::json options = {
      {"obs_dim", obs}, {"action_dim", action}, {"hidden", {hidden, hidden}}, {"activation", "relu"}};
  return sim::PolicyFile{path, {"mlp", options}};
}

struct TaskFigures {
  std::vector<double> ours, anchor, ratio, inference_share;
};

absl::StatusOr<TaskFigures> BenchTask(const SimPolicyBenchOptions& o, const sim::TaskRegistry& registry,
                                      const std::string& task_name, const std::string& models_dir) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto task, registry.Create(task_name));
  const std::string mlp = JoinPath(o.scratch_dir, absl::StrCat("sim-policy-bench-", task_name, ".safetensors"));
  ROBOLOOP_ASSIGN_OR_RETURN(sim::PolicyFile mlp_file,
                            WriteRandomMlp(mlp, task->obs_spec().size(), o.hidden, task->action_spec().size()));
  ROBOLOOP_ASSIGN_OR_RETURN(auto network, sim::LoadPolicyFile(mlp_file, sim::PolicyRunOptions(), task->obs_spec(),
                                                              task->action_spec()));
  TimedPolicy policy(network.get());
  sim::RolloutOptions rollout;
  rollout.num_envs = o.envs;
  rollout.num_episodes = o.envs;
  rollout.num_threads = o.threads;
  rollout.overlap_inference = o.overlap_inference;
  rollout.max_steps = o.max_steps > 0 ? o.max_steps : task->max_steps();
  ROBOLOOP_ASSIGN_OR_RETURN(auto engine, sim::RolloutEngine::Create(task.get(), rollout));
  // The anchor does the same physics work: one trajectory per env, as many steps.
  const int anchor_steps = rollout.max_steps * task->control_substeps();
  const std::string model = JoinPath(models_dir, task_name == "reacher" ? "reacher.xml" : "cartpole.xml");
  TaskFigures figures;
  for (int run = 0; run < o.runs; ++run) {
    StepCountingSink sink;
    policy.Reset();
    const auto start = Clock::now();
    ROBOLOOP_RETURN_IF_ERROR(engine->Run(policy, sink));
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const double ours = static_cast<double>(sink.steps() * task->control_substeps()) / seconds;
    ROBOLOOP_ASSIGN_OR_RETURN(double anchor, RunMujocoRollout({o.python, model, anchor_steps, o.threads,
                                                               o.control_noise, o.envs}));
    std::printf("%s run %d: ours %.0f physics steps/s (inference %.0f%%), mujoco.rollout %.0f, ratio %.3f\n",
                task_name.c_str(), run + 1, ours, 100 * policy.seconds() / seconds, anchor, ours / anchor);
    std::fflush(stdout);
    figures.ours.push_back(ours);
    figures.anchor.push_back(anchor);
    figures.ratio.push_back(ours / anchor);
    figures.inference_share.push_back(policy.seconds() / seconds);
  }
  (void)RemoveFile(mlp);
  return figures;
}

}  // namespace

absl::Status RunSimPolicyBench(const SimPolicyBenchOptions& o) {
  if (o.runs < 1 || o.threads < 1 || o.envs < 1 || o.hidden < 1 || o.max_steps < 0) {
    return absl::InvalidArgumentError("runs, threads, envs and hidden must be >= 1, max_steps >= 0");
  }
  sim::TaskRegistry registry;
  sim::BuiltinTaskOptions builtin;
  ROBOLOOP_RETURN_IF_ERROR(sim::RegisterBuiltins(&registry, builtin));
  const std::string load_before = LoadAverage();
  std::vector<std::pair<std::string, TaskFigures>> results;
  for (const std::string& task : o.tasks) {
    if (task != "cartpole-swingup" && task != "reacher") {
      return absl::InvalidArgumentError(absl::StrCat("task '", task, "': part (b) runs cartpole-swingup and reacher"));
    }
    ROBOLOOP_ASSIGN_OR_RETURN(TaskFigures figures, BenchTask(o, registry, task, builtin.models_dir));
    results.emplace_back(task, std::move(figures));
  }
  std::printf("\nSimulation benchmark (b): batched MLP policy (hidden %dx2, relu, batch-invariant) vs mujoco.rollout\n",
              o.hidden);
  std::printf("  %d envs, %d threads, one episode per env (no resets mid-run); the anchor runs one trajectory per\n"
              "  env of as many physics steps, control noise %g; %d alternating runs\n",
              o.envs, o.threads, o.control_noise, o.runs);
  for (const auto& [task, f] : results) {
    const Summary r = Summarize(f.ratio), share = Summarize(f.inference_share);
    std::printf("%s:\n", task.c_str());
    PrintSide("ours (physics steps/s)", f.ours);
    PrintSide("mujoco.rollout (physics steps/s)", f.anchor);
    std::printf("  ratio ours/mujoco.rollout          median %10.3f  min %10.3f  max %10.3f\n", r.median, r.min, r.max);
    std::printf("  inference share of wall time       median %9.1f%%  min %9.1f%%  max %9.1f%%\n", 100 * share.median,
                100 * share.min, 100 * share.max);
  }
  std::printf("\nsettings:\n%sload average (1/5/15 min): %s before, %s after\n", MachineSettings().c_str(),
              load_before.c_str(), LoadAverage().c_str());
  return absl::OkStatus();
}

}  // namespace roboloop::bench
