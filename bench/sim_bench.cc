#include "bench/sim_bench.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <mujoco/mujoco.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "bench/bench_stats.h"
#include "bench/rollout_anchor.h"
#include "common/status.h"
#include "sim/builtin_tasks.h"
#include "sim/rollout.h"
#include "sim/task_registry.h"

namespace roboloop::bench {
namespace {

using Clock = std::chrono::steady_clock;

// testspeed's control noise: each dimension at centre + noise × half-range × (2·Halton − 1),
// indexed by the step, so every env sees the same sequence (as every anchor trajectory does).
class ControlNoisePolicy : public sim::Policy {
 public:
  ControlNoisePolicy(const sim::Task& task, double noise)
      : obs_spec_(task.obs_spec()), action_spec_(task.action_spec()), noise_(noise) {}

  std::string name() const override { return "testspeed-control-noise"; }
  const sim::ObsSpec& obs_spec() const override { return obs_spec_; }
  const sim::ActionSpec& action_spec() const override { return action_spec_; }

  absl::Status Act(const sim::PolicyBatch& batch, float* actions) override {
    const int size = action_spec_.size();
    for (int row = 0; row < batch.batch; ++row) {
      for (int j = 0; j < size; ++j) {
        const double center = 0.5 * (action_spec_.high[j] + action_spec_.low[j]);
        const double radius = 0.5 * (action_spec_.high[j] - action_spec_.low[j]) * noise_;
        actions[row * size + j] =
            static_cast<float>(center + radius * (2 * mju_Halton(batch.step[row], j + 2) - 1));
      }
    }
    return absl::OkStatus();
  }

 private:
  sim::ObsSpec obs_spec_;
  sim::ActionSpec action_spec_;
  double noise_;
};

// Accepts only episodes that ran the full horizon, so that no env reset during the run.
class FullLengthSink : public sim::EpisodeSink {
 public:
  explicit FullLengthSink(int horizon) : horizon_(horizon) {}
  absl::Status OnEpisode(const sim::EpisodeRecord& record, const sim::Trajectory*) override {
    if (record.end_reason != sim::EndReason::kTruncated || record.length != horizon_) {
      return absl::InternalError(absl::StrCat(
          "benchmark episode ", record.episode_index, " ended after ", record.length, " of ",
          horizon_, " steps (", sim::EndReasonName(record.end_reason), ": ", record.end_detail,
          "); the comparison needs full-length episodes"));
    }
    return absl::OkStatus();
  }

 private:
  int horizon_;
};

absl::Status ValidateOptions(const SimBenchOptions& o) {
  if (o.runs < 1) return absl::InvalidArgumentError(absl::StrCat("runs must be >= 1, got ", o.runs));
  if (o.threads < 1) {
    return absl::InvalidArgumentError(absl::StrCat("threads must be >= 1, got ", o.threads));
  }
  if (o.envs < 1) return absl::InvalidArgumentError(absl::StrCat("envs must be >= 1, got ", o.envs));
  if (o.env_steps < 1) {
    return absl::InvalidArgumentError(absl::StrCat("env_steps must be >= 1, got ", o.env_steps));
  }
  if (!(o.control_noise >= 0 && o.control_noise <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("control_noise must be within [0, 1], got ", o.control_noise));
  }
  return absl::OkStatus();
}

// One timed run of our pool; returns physics steps per second over all envs.
absl::StatusOr<double> RunOurs(sim::RolloutEngine& engine, sim::Policy& policy, int horizon,
                               int64_t physics_steps) {
  FullLengthSink sink(horizon);
  const auto start = Clock::now();
  ROBOLOOP_RETURN_IF_ERROR(engine.Run(policy, sink));
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return static_cast<double>(physics_steps) / seconds;
}

}  // namespace

absl::Status RunSimBench(const SimBenchOptions& o) {
  ROBOLOOP_RETURN_IF_ERROR(ValidateOptions(o));
  sim::TaskRegistry registry;
  sim::BuiltinTaskOptions builtin;
  builtin.humanoid_model = o.humanoid_model;
  ROBOLOOP_RETURN_IF_ERROR(sim::RegisterBuiltins(&registry, builtin));
  ROBOLOOP_ASSIGN_OR_RETURN(auto task, registry.Create("humanoid-stand"));

  sim::RolloutOptions rollout;
  rollout.num_envs = o.envs;
  rollout.num_episodes = o.envs;
  rollout.num_threads = o.threads;
  rollout.max_steps = o.env_steps;
  ROBOLOOP_ASSIGN_OR_RETURN(auto engine, sim::RolloutEngine::Create(task.get(), rollout));
  ControlNoisePolicy policy(*task, o.control_noise);
  const int physics_steps_per_env = o.env_steps * task->control_substeps();
  const int64_t our_physics_steps = static_cast<int64_t>(physics_steps_per_env) * o.envs;

  const std::string load_before = LoadAverage();
  std::vector<double> ours, anchor, ratio;
  for (int run = 0; run < o.runs; ++run) {
    ROBOLOOP_ASSIGN_OR_RETURN(double our_rate,
                              RunOurs(*engine, policy, o.env_steps, our_physics_steps));
    ROBOLOOP_ASSIGN_OR_RETURN(double anchor_rate,
                              RunMujocoRollout({o.python, o.humanoid_model, physics_steps_per_env, o.threads,
                                                o.control_noise, o.envs}));
    std::printf("run %d: ours %.0f physics steps/s, mujoco.rollout %.0f, ratio %.3f\n", run + 1,
                our_rate, anchor_rate, our_rate / anchor_rate);
    std::fflush(stdout);
    ours.push_back(our_rate);
    anchor.push_back(anchor_rate);
    ratio.push_back(our_rate / anchor_rate);
  }

  const Summary r = Summarize(ratio);
  std::printf("\nSimulation benchmark (a): humanoid-stand env pool vs mujoco.rollout (MuJoCo %s)\n",
              mj_versionString());
  std::printf("  model %s, %d threads, %d envs and as many anchor trajectories, %d physics steps each\n",
              o.humanoid_model.c_str(), o.threads, o.envs, physics_steps_per_env);
  std::printf("  control noise %g of the control range, no resets, observation copy and state-hash "
              "chain on, %d alternating runs\n",
              o.control_noise, o.runs);
  PrintSide("ours (physics steps/s)", ours);
  PrintSide("mujoco.rollout (physics steps/s)", anchor);
  std::printf("  ratio ours/mujoco.rollout          median %10.3f  min %10.3f  max %10.3f\n",
              r.median, r.min, r.max);
  std::printf("\nsettings:\n%sload average (1/5/15 min): %s before, %s after\n",
              MachineSettings().c_str(), load_before.c_str(), LoadAverage().c_str());
  return absl::OkStatus();
}

}  // namespace roboloop::bench
