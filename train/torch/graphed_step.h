// The training step as a CUDA graph replay (issue 22, req 6). At the default policy size a
// step is a few hundred small kernels and the GPU waits for the host to launch them; a graph
// launches the whole step (forward, backward, clipping, the fused AdamW update, EMA) at once.
// As torch.cuda.graph does: warm-up steps on a side stream, then one capture into a private
// memory pool, then replays; each replay reads static device buffers that the step's inputs,
// noise, learning rate and AdamW step count are copied into first. Used only where the rule of
// train/cuda_graph_rule.h allows. Inside libroboloop_torch.so.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>

#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include "train/torch/policy/policy_model.h"

namespace roboloop::train {

// The part of a step a graph captures: the loss of `inputs` with `noise`, backward, clipping,
// and an update with learning rate `lr` and AdamW step count `count` (float32 0-d device
// tensors) that is applied only where both the loss and the gradient norm are finite. Returns
// float32 [2] on the device: {loss, gradient norm before clipping}. Must neither synchronise
// with the host nor change shapes from call to call.
using CapturableStep = std::function<torch::Tensor(const PolicyInputs& inputs, const LossNoise& noise,
                                                   const torch::Tensor& lr, const torch::Tensor& count)>;

// A step's figures as a replay leaves them.
struct ReplayedFigures {
  double loss = 0;       // the loss before the update
  double grad_norm = 0;  // the gradient norm before clipping
};

// Thrown by GraphedStep::Replay when capturing the step failed. The stream has left capture,
// nothing the capture recorded ran and its memory pool is released, so the step can still be
// taken eagerly (what `auto` does). Running out of memory while capturing is not this error:
// Replay rethrows c10::OutOfMemoryError as it is.
class GraphCaptureError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The calls that capture a step, apart from what a failure among them leads to
// (CaptureOrAbandon), so that the latter runs without a GPU too.
struct CaptureCalls {
  std::function<void()> begin;            // starts the capture
  std::function<torch::Tensor()> record;  // records the step; returns its figures
  std::function<void()> end;              // ends the capture
  std::function<void()> abandon;          // undoes a capture that failed anywhere; throws nothing
};

// Runs calls.begin, calls.record and calls.end and returns record's figures. When any of them
// throws, runs calls.abandon and throws GraphCaptureError naming cuda_graph and the failure,
// except c10::OutOfMemoryError, rethrown as it is (after abandon).
torch::Tensor CaptureOrAbandon(const CaptureCalls& calls);

// LibTorch's CUDA graph, which can also undo a capture that failed. CUDAGraph's own reset()
// assumes capture_end() succeeded: after a failure inside capture_begin(), the capture or
// capture_end() it leaves the caching allocators (device and pinned host) routing allocations
// to the graph's pool (while they do, the device allocator stops recycling memory used across
// streams), the pool unreleased (pool() refuses to name it) and the CUDA generator in capture
// mode (its next eager draw fails an internal assertion).
class RecoverableCudaGraph : public at::cuda::CUDAGraph {
 public:
  // After a failure anywhere from capture_begin() to capture_end(), on a graph that had not
  // captured before: ends the stream's capture if capture_begin() started it and it is still
  // on, stops allocating to the graph's pools and releases them where capture_begin() had
  // opened them, takes the generators out of capture mode and resets the graph. Throws nothing.
  void AbandonFailedCapture() noexcept;
};

// The graph of one trainer's step on one CUDA device. Not thread-safe.
class GraphedStep {
 public:
  // Eager steps (WarmUp) taken before the capture: they initialise the kernels' lazy state,
  // cuBLAS workspaces and the optimizer's moments outside the graph's pool.
  static constexpr int kWarmupSteps = 3;

  // Captures `step` (on first Replay) on `device`.
  GraphedStep(const torch::Device& device, CapturableStep step);
  GraphedStep(const GraphedStep&) = delete;
  GraphedStep& operator=(const GraphedStep&) = delete;

  // True when a step on `inputs` and `noise` is a replay: the warm-up is done and nothing is
  // captured yet, or the capture's shapes are theirs. False means: take the step eagerly
  // (through WarmUp while warming up).
  bool Takes(const PolicyInputs& inputs, const LossNoise& noise) const;
  // Whether kWarmupSteps warm-up steps have run.
  bool WarmedUp() const { return warmups_ >= kWarmupSteps; }
  // Runs `eager_step` (one training step taken eagerly) on the side stream captures run on,
  // after the current stream's work and before its next, and counts it as a warm-up step when
  // it returns. Exceptions of `eager_step` propagate (the step is then not counted).
  void WarmUp(const std::function<void()>& eager_step);
  // Copies `inputs` and `noise` (CPU or device tensors) into the static buffers, `lr` and
  // `count` into the device scalars, captures the step the first time, replays it on the
  // current stream and reads its figures (the step's one host synchronisation). Requires
  // Takes(inputs, noise). Throws GraphCaptureError naming cuda_graph when the capture fails.
  ReplayedFigures Replay(const PolicyInputs& inputs, const LossNoise& noise, double lr, int64_t count);

 private:
  // Captures step_ into graph_ on the side stream; throws GraphCaptureError on failure.
  void Capture();

  torch::Device device_;
  CapturableStep step_;
  c10::cuda::CUDAStream side_;
  int warmups_ = 0;
  bool captured_ = false;
  // The graph before the tensors of its pool, so that they are released first.
  RecoverableCudaGraph graph_;
  PolicyInputs inputs_;           // static inputs (undefined until the capture)
  LossNoise noise_;               // static noise (undefined tensors: the policy draws none)
  torch::Tensor host_scalars_;    // pinned float32 [2]: {lr, count} of the next replay
  torch::Tensor scalars_;         // their device copy, read by the graph
  torch::Tensor figures_;         // float32 [2] device: {loss, grad_norm}, written by the graph
};

}  // namespace roboloop::train
