// bench/train_bench: the training benchmark as its own program (also `roboloop bench train`).
#include <CLI/CLI.hpp>

#include <cstdio>

#include "bench/train_bench.h"

int main(int argc, char** argv) {
  roboloop::bench::TrainBenchOptions options;
  CLI::App app{"Training benchmark: TorchTrainer vs an eager PyTorch loop (bench/peers/train_peer.py)"};
  app.add_option("--part", options.part, "a (model step), b (end to end), c (packed vs padded), "
                 "d (data parallel), v (image policy) or all")->capture_default_str();
  app.add_option("--device", options.device, "cpu (parts a-v) or cuda (part g: the GPU model step)")
      ->capture_default_str();
  app.add_option("--model", options.model, "Part g: small or 151m")->capture_default_str();
  app.add_option("--cuda-graph", options.cuda_graph,
                 "Part g: on also times ours padded with the step as a CUDA graph vs eager (on or off)")
      ->capture_default_str();
  app.add_flag("--quick", options.quick, "Smoke test: batch 32, 1 run, 2 timed steps");
  app.add_option("--runs", options.runs, "Alternating runs per side")->capture_default_str();
  app.add_option("--threads", options.threads, "Torch threads of both sides (0 = the online cores)")->capture_default_str();
  app.add_option("--batch", options.batch, "Samples per step (per rank in part d)")->capture_default_str();
  app.add_option("--steps", options.steps, "Timed steps per run")->capture_default_str();
  app.add_option("--warmup", options.warmup, "Untimed steps before them")->capture_default_str();
  app.add_option("--episodes", options.episodes, "Part b: episodes of the dataset")->capture_default_str();
  app.add_option("--python", options.python, "Interpreter of the peer")->capture_default_str();
  app.add_option("--peer", options.peer_script, "The peer script (default: this tree's)");
  app.add_option("--work-dir", options.work_dir, "Scratch folder");
  app.add_option("--vision-batch", options.vision_batch, "Part v: samples per step")->capture_default_str();
  app.add_option("--vision-side", options.vision_side, "Part v: camera width and height")->capture_default_str();
  app.add_option("--vision-peer", options.vision_peer_script, "Part v's peer script (default: this tree's)");
  app.add_option("--dp-rank", options.dp_rank)->group("");
  app.add_option("--dp-world", options.dp_world)->group("");
  app.add_option("--dp-port", options.dp_port)->group("");
  CLI11_PARSE(app, argc, argv);
  const absl::Status status = options.dp_rank >= 0 ? roboloop::bench::RunTrainBenchRank(options)
                                                   : roboloop::bench::RunTrainBench(options);
  if (!status.ok()) {
    std::fprintf(stderr, "train_bench: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
