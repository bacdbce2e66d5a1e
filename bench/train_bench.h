// The training benchmark (issue 6, req 10): the transformer policy (obs 16, action 4, history 8,
// chunk 16, d_model 128, 4 layers, 4 heads, FFN 512, batch 256, AdamW, fp32) trained through
// TorchTrainer, against bench/peers/train_peer.py (the same model as an eager PyTorch loop),
// alternating the two sides in one run with the same threads and environment:
//   (a) model step on synthetic batches: samples/s ratio and model FLOPs utilisation against
//       the sgemm rate the peer measures with torch.mm at the same threads;
//   (b) end to end from an HDF5 dataset written here: Loader + packing + step vs the peer's
//       DataLoader over the same file (h5py);
//   (c) ours packed vs ours padded on batches whose history lengths vary 4x: real tokens/s;
//   (d) data-parallel efficiency: 2 ranks x 1 thread vs 1 rank x 1 thread (ranks are child
//       processes of this program joined by a TCPStore rendezvous on loopback);
//   (v) issue 23, req 8: an image policy (mlp, one 84x84 camera, the image encoder at its
//       defaults, random shift) at batch 64, against bench/peers/vision_train_peer.py (the same
//       module from python/roboloop_policy.py trained by an eager PyTorch loop): samples/s ratio;
//   (g) with --device cuda (issue 22, req 7), instead of the CPU parts: --model small (the shape
//       above) or 151m (obs 64, action 14, 64 observation + 50 action tokens, d_model 1024, 12
//       layers, 16 heads, FFN 4096) on the GPU, alternating ours in bf16 and FP8, ours packed vs
//       padded, and the peer with --device cuda --bf16 (eager and, for 151m, --compile); with
//       --cuda-graph on also ours padded on full histories with the step as a CUDA graph replay
//       against the same eager (issue 22, req 6: the gain of graphs on the launch-bound small model).
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "bench/bench_stats.h"

namespace roboloop::bench {

// What to run and how long; the model shape is fixed by the issue.
struct TrainBenchOptions {
  std::string part = "all";  // "a", "b", "c", "d", "v" or "all" (the CPU parts)
  std::string device = "cpu";  // "cpu" (parts a-v) or "cuda" (part g)
  std::string model = "small";  // part g: "small" or "151m"
  std::string cuda_graph = "off";  // part g: "on" also times ours padded as a CUDA graph vs eager
  bool quick = false;        // smoke test: batch 32, 1 run, 2 timed steps, a small dataset
  int runs = 5;              // alternating runs per side
  int threads = 0;           // torch intra-op threads of both sides, 0 = the online cores (part d: 1 per rank)
  int batch = 256;           // samples per step (per rank in part d)
  int steps = 10;            // timed steps per run
  int warmup = 3;            // untimed steps before them
  int episodes = 200;        // part b: episodes of the dataset
  std::string python = DefaultPeerPython();  // interpreter of the peer (the project environment's torch)
  std::string peer_script;   // the peer; empty = bench/peers/train_peer.py of this source tree
  int vision_batch = 64;     // part v: samples per step
  int vision_side = 84;      // part v: camera width and height
  std::string vision_peer_script;  // part v's peer; empty = bench/peers/vision_train_peer.py here
  std::string work_dir;      // scratch folder (default: a new one under /tmp)
  // Arguments between this executable and the --dp-* flags that rerun it as one
  // data-parallel rank (part d), e.g. {"bench", "train"} for the roboloop binary.
  std::vector<std::string> self_arguments;
  int dp_rank = -1;          // >= 0: run as rank dp_rank of a part-d job, print its rate, exit
  int dp_world = 1;          // part-d job: world size
  int dp_port = 0;           // part-d job: rendezvous port on 127.0.0.1
};

// Runs the selected parts and prints, per part, one line starting "result (<part>)" with the
// figures, the goal, whether it is met, and the settings (threads, OMP_*/OPENBLAS_* variables,
// BLAS, CPU); with device "cuda" runs part g alone. InvalidArgument on a bad part, device or
// model name; Internal when a side fails.
absl::Status RunTrainBench(const TrainBenchOptions& options);

// One rank of a part-d job (options.dp_rank >= 0): joins the rendezvous, runs warm-up and timed
// steps on synthetic batches with 1 thread, and prints
// "dp_rank_seconds <timed seconds> blas_threads <OpenBLAS pool>".
absl::Status RunTrainBenchRank(const TrainBenchOptions& options);

}  // namespace roboloop::bench
