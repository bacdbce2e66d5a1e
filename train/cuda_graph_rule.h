// When a trainer captures its step in a CUDA graph (issue 22, req 6): the trainer option
// `cuda_graph` (true | false; absent = auto) against what the setup allows. A graph replays the
// same kernels on the same buffers, so it needs tensor shapes that do not change from step to
// step and a step that never waits for the host inside it. Torch-free, so the rule is tested on
// machines without a GPU; train/torch/trainer.cc applies it.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace roboloop::train {

// What decides whether the training step can be captured.
struct CudaGraphSetup {
  bool cuda = false;              // the trainer's device is a GPU
  int world_size = 1;             // ranks of the job (gradients are not averaged inside a graph)
  bool packed_attention = false;  // a transformer with packed: true (pack plans follow the data)
  bool cameras = false;           // the policy sees frames (their random shifts are drawn in the loss)
  bool fused_adamw = false;       // the optimizer is the fused AdamW (its update reads a device lr)
};

// Whether the steps of `setup` run as CUDA graph replays when the trainer option cuda_graph is
// `requested` (nullopt = auto):
// - false: never;
// - auto: exactly when every condition holds (a GPU, world_size 1, no packed attention, no
//   cameras, the fused AdamW);
// - true: the same, but InvalidArgument naming cuda_graph and the first condition that fails
//   (and what to change) instead of false.
absl::StatusOr<bool> UseCudaGraph(std::optional<bool> requested, const CudaGraphSetup& setup);

// The run option cuda_graph (TrainConfig, --cuda-graph) as the trainer option: "" or "auto"
// -> nullopt, "on" -> true, "off" -> false. InvalidArgument naming cuda_graph and the accepted
// values otherwise.
absl::StatusOr<std::optional<bool>> ParseCudaGraphOption(const std::string& value);

}  // namespace roboloop::train
