#include "cli/bench.h"

#include <memory>

#include "bench/data_bench.h"
#include "bench/registry_bench.h"
#include "bench/sim_bench.h"
#include "bench/sim_policy_bench.h"
#include "bench/train_bench.h"
#include "common/status.h"

namespace roboloop::cli {

void AddBenchCommands(CLI::App& app, CommandRunner& runner) {
  CLI::App* bench = app.add_subcommand("bench", "Run a benchmark (figures in docs/BENCHMARKS.md)");
  bench->require_subcommand(1);
  auto options = std::make_shared<bench::RegistryBenchOptions>();
  CLI::App* registry = bench->add_subcommand("registry", "Registry transfers and latency vs anchors");
  registry->add_option("--file-mib", options->file_mib, "Size of the transferred file")->capture_default_str();
  registry->add_option("--runs", options->runs, "Alternating runs per side")->capture_default_str();
  registry->add_option("--catalog", options->catalog_size, "Checkpoints in the catalog")->capture_default_str();
  registry->add_option("--clients", options->background_clients, "Concurrent registering clients")
      ->capture_default_str();
  registry->add_option("--samples", options->latency_samples, "Timed calls of each kind")->capture_default_str();
  registry->add_option("--work-dir", options->work_dir, "Scratch folder");
  registry->add_option("--client-rate", options->background_rate,
                       "Registrations/s of each background client (0 = full speed)")->capture_default_str();
  registry->add_flag("!--no-durable-commits", options->durable_commits,
                     "Catalog commits with synchronous=NORMAL instead of FULL");
  runner.Bind(registry, [options] { return bench::RunRegistryBench(*options); });

  auto sim_options = std::make_shared<bench::SimBenchOptions>();
  auto policy_options = std::make_shared<bench::SimPolicyBenchOptions>();
  auto part = std::make_shared<std::string>("all");
  CLI::App* sim = bench->add_subcommand(
      "sim", "Env pool vs mujoco.rollout: (a) the humanoid, (b) cartpole-swingup and reacher with an MLP policy");
  sim->add_option("--runs", sim_options->runs, "Alternating runs per side")->capture_default_str();
  sim->add_option("--part", *part, "a, b or all")->check(CLI::IsMember({"a", "b", "all"}))->capture_default_str();
  sim->add_option("--policy-envs", policy_options->envs, "(b): envs of our pool")->capture_default_str();
  sim->add_option("--policy-max-steps", policy_options->max_steps, "(b): env steps per episode (0 = the task's)")
      ->capture_default_str();
  sim->add_option("--policy-tasks", policy_options->tasks, "(b): tasks to run")->capture_default_str();
  sim->add_flag("--policy-overlap", policy_options->overlap_inference,
                "(b): overlap inference with physics (RolloutOptions::overlap_inference)");
  runner.Bind(sim, [sim_options, policy_options, part] {
    if (*part != "b") ROBOLOOP_RETURN_IF_ERROR(bench::RunSimBench(*sim_options));
    if (*part == "a") return absl::OkStatus();
    policy_options->runs = sim_options->runs;
    return bench::RunSimPolicyBench(*policy_options);
  });

  auto data_options = std::make_shared<bench::DataBenchOptions>();
  CLI::App* data = bench->add_subcommand("data", "HDF5 dataset write/load vs cp + sha256sum");
  data->add_option("--episodes", data_options->episodes, "Episodes")->capture_default_str();
  data->add_option("--runs", data_options->runs, "Alternating runs per side")->capture_default_str();
  runner.Bind(data, [data_options] { return bench::RunDataBench(*data_options); });

  auto train_options = std::make_shared<bench::TrainBenchOptions>();
  train_options->self_arguments = {"bench", "train"};
  CLI::App* train = bench->add_subcommand("train", "TorchTrainer vs an eager PyTorch loop (bench/peers/train_peer.py)");
  train->add_option("--part", train_options->part, "a (model step), b (end to end), c (packed vs padded), "
                    "d (data parallel), v (image policy) or all")->capture_default_str();
  train->add_option("--device", train_options->device, "cpu (parts a-v) or cuda (part g: the GPU model step)")
      ->capture_default_str();
  train->add_option("--model", train_options->model, "Part g: small or 151m")->capture_default_str();
  train->add_option("--cuda-graph", train_options->cuda_graph,
                    "Part g: on also times ours padded with the step as a CUDA graph vs eager (on or off)")
      ->capture_default_str();
  train->add_flag("--quick", train_options->quick, "Smoke test: batch 32, 1 run, 2 timed steps");
  train->add_option("--runs", train_options->runs, "Alternating runs per side")->capture_default_str();
  train->add_option("--threads", train_options->threads, "Torch threads of both sides (0 = the online cores)")->capture_default_str();
  train->add_option("--batch", train_options->batch, "Samples per step (per rank in part d)")->capture_default_str();
  train->add_option("--steps", train_options->steps, "Timed steps per run")->capture_default_str();
  train->add_option("--warmup", train_options->warmup, "Untimed steps before them")->capture_default_str();
  train->add_option("--episodes", train_options->episodes, "Part b: episodes of the dataset")->capture_default_str();
  train->add_option("--python", train_options->python, "Interpreter of the peer")->capture_default_str();
  train->add_option("--peer", train_options->peer_script, "The peer script (default: the source tree's)");
  train->add_option("--vision-batch", train_options->vision_batch, "Part v: samples per step")->capture_default_str();
  train->add_option("--vision-side", train_options->vision_side, "Part v: camera width and height")->capture_default_str();
  train->add_option("--vision-peer", train_options->vision_peer_script, "Part v's peer script (default: the source tree's)");
  train->add_option("--dp-rank", train_options->dp_rank)->group("");
  train->add_option("--dp-world", train_options->dp_world)->group("");
  train->add_option("--dp-port", train_options->dp_port)->group("");
  runner.Bind(train, [train_options] {
    return train_options->dp_rank >= 0 ? bench::RunTrainBenchRank(*train_options)
                                       : bench::RunTrainBench(*train_options);
  });
}

}  // namespace roboloop::cli
