// bench/sim_bench: the simulation benchmark as its own program (also `roboloop bench sim`).
#include <CLI/CLI.hpp>

#include <cstdio>

#include "bench/sim_bench.h"

int main(int argc, char** argv) {
  roboloop::bench::SimBenchOptions options;
  CLI::App app{"Simulation benchmark: our env pool vs mujoco.rollout on the same model"};
  app.add_option("--runs", options.runs, "Alternating runs per side")->capture_default_str();
  app.add_option("--threads", options.threads, "Physics threads of both sides")->capture_default_str();
  app.add_option("--envs", options.envs, "Envs of our pool")->capture_default_str();
  app.add_option("--env-steps", options.env_steps, "Env steps per env")->capture_default_str();
  app.add_option("--control-noise", options.control_noise, "Control noise, fraction of the range")
      ->capture_default_str();
  app.add_option("--python", options.python, "Interpreter that runs the anchor (mujoco.rollout)")
      ->capture_default_str();
  app.add_option("--model", options.humanoid_model, "The humanoid MJCF")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  absl::Status status = roboloop::bench::RunSimBench(options);
  if (!status.ok()) {
    std::fprintf(stderr, "sim_bench: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
