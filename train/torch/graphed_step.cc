// Capture and replay of the training step.
#include "train/torch/graphed_step.h"

#include <ATen/core/CachingHostAllocator.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>

namespace roboloop::train {
namespace {

// A copy of `t` on `device` to serve as a static buffer; undefined stays undefined.
torch::Tensor StaticCopy(const torch::Tensor& t, const torch::Device& device) {
  return t.defined() ? torch::empty(t.sizes(), t.options().device(device)).copy_(t) : torch::Tensor();
}

void CopyInto(torch::Tensor& buffer, const torch::Tensor& source) {
  if (buffer.defined()) buffer.copy_(source);
}

bool SameShape(const torch::Tensor& buffer, const torch::Tensor& t) {
  return buffer.defined() == t.defined() && (!t.defined() || buffer.sizes() == t.sizes());
}

// Makes `later` wait for the work queued on `earlier` so far.
void Order(const c10::cuda::CUDAStream& earlier, const c10::cuda::CUDAStream& later) {
  c10::cuda::CUDAEvent done;
  done.record(earlier);
  done.block(later);
}

// Runs `undo`, one step of undoing a failed capture, and drops what it throws: the steps after
// it still run. LibTorch throws c10::Error for a pool that is not open, std::out_of_range for
// one it does not know.
template <typename Undo>
void DropErrors(const Undo& undo) noexcept {
  try {
    undo();
  } catch (const std::exception&) {
  }
}

}  // namespace

GraphedStep::GraphedStep(const torch::Device& device, CapturableStep step)
    : device_(device), step_(std::move(step)), side_(c10::cuda::getStreamFromPool(false, device.index())) {
  host_scalars_ = torch::zeros({2}, torch::TensorOptions().dtype(torch::kFloat).pinned_memory(true));
  scalars_ = torch::zeros({2}, torch::TensorOptions().dtype(torch::kFloat).device(device));
}

bool GraphedStep::Takes(const PolicyInputs& inputs, const LossNoise& noise) const {
  if (!WarmedUp()) return false;
  if (!captured_) return true;
  return SameShape(inputs_.obs, inputs.obs) && SameShape(inputs_.actions, inputs.actions) &&
         SameShape(noise_.flow_noise, noise.flow_noise);
}

void GraphedStep::WarmUp(const std::function<void()>& eager_step) {
  const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(device_.index());
  Order(current, side_);
  {
    const c10::cuda::CUDAStreamGuard on_side(side_);
    try {
      eager_step();
    } catch (...) {
      Order(side_, current);
      throw;
    }
  }
  Order(side_, current);
  ++warmups_;
}

ReplayedFigures GraphedStep::Replay(const PolicyInputs& inputs, const LossNoise& noise, double lr, int64_t count) {
  TORCH_CHECK(Takes(inputs, noise), "GraphedStep::Replay: the step is not captured for these shapes");
  if (!captured_) {
    inputs_.obs = StaticCopy(inputs.obs, device_);
    inputs_.history_length = StaticCopy(inputs.history_length, device_);
    inputs_.actions = StaticCopy(inputs.actions, device_);
    inputs_.action_valid = StaticCopy(inputs.action_valid, device_);
    noise_.flow_noise = StaticCopy(noise.flow_noise, device_);
    noise_.flow_times = StaticCopy(noise.flow_times, device_);
  } else {
    CopyInto(inputs_.obs, inputs.obs);
    CopyInto(inputs_.history_length, inputs.history_length);
    CopyInto(inputs_.actions, inputs.actions);
    CopyInto(inputs_.action_valid, inputs.action_valid);
    CopyInto(noise_.flow_noise, noise.flow_noise);
    CopyInto(noise_.flow_times, noise.flow_times);
  }
  // The previous replay's read-back waited for its scalars' copy: the pinned buffer is free.
  float* host = host_scalars_.data_ptr<float>();
  host[0] = static_cast<float>(lr);
  host[1] = static_cast<float>(count);
  scalars_.copy_(host_scalars_, /*non_blocking=*/true);
  if (!captured_) Capture();
  graph_.replay();
  const torch::Tensor figures = figures_.cpu();
  return ReplayedFigures{figures[0].item<double>(), figures[1].item<double>()};
}

torch::Tensor CaptureOrAbandon(const CaptureCalls& calls) {
  try {
    calls.begin();
    torch::Tensor figures = calls.record();
    calls.end();
    return figures;
  } catch (const c10::OutOfMemoryError&) {
    calls.abandon();
    throw;  // not a capture problem: an eager step would run out of memory too
  } catch (const std::exception& e) {
    calls.abandon();
    throw GraphCaptureError(std::string("capturing the training step in a CUDA graph failed (cuda_graph: off "
                                        "trains without one): ") + e.what());
  }
}

void GraphedStep::Capture() {
  const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(device_.index());
  Order(current, side_);
  try {
    const c10::cuda::CUDAStreamGuard on_side(side_);
    figures_ = CaptureOrAbandon({[this] { graph_.capture_begin(); },  // a private memory pool
                                 [this] { return step_(inputs_, noise_, scalars_[0], scalars_[1]); },
                                 [this] { graph_.capture_end(); }, [this] { graph_.AbandonFailedCapture(); }});
  } catch (...) {
    Order(side_, current);
    throw;
  }
  Order(side_, current);
  captured_ = true;
}

void RecoverableCudaGraph::AbandonFailedCapture() noexcept {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  // capture_id_ is set once capture_begin() has started the stream's capture: any capture
  // before that is not this graph's to end.
  if (capture_id_ != 0 && cudaStreamIsCapturing(capture_stream_.stream(), &status) == cudaSuccess &&
      status != cudaStreamCaptureStatusNone) {
    cudaGraph_t partial = nullptr;
    (void)cudaStreamEndCapture(capture_stream_.stream(), &partial);  // an invalidated capture gives no graph
    if (partial != nullptr) (void)cudaGraphDestroy(partial);
  }
  (void)cudaGetLastError();  // the capture's error is the one reported
  // capture_begin() names the pool just before it opens it: without a name nothing was opened.
  if (mempool_id_ != decltype(mempool_id_){0, 0}) {
    // capture_end() may have stopped allocating to the pools before it failed.
    DropErrors([&] { c10::cuda::CUDACachingAllocator::endAllocateToPool(capture_dev_, mempool_id_); });
    DropErrors([&] { at::getHostAllocator(at::kCUDA)->end_allocate_to_pool(mempool_id_); });
    // Once capture_end() got the graph, reset() releases the pools; before, nothing else does.
    if (!capture_ended_) {
      DropErrors([&] { c10::cuda::CUDACachingAllocator::releasePool(capture_dev_, mempool_id_); });
      DropErrors([&] { at::getHostAllocator(at::kCUDA)->release_pool(mempool_id_); });
    }
  }
  for (auto& generator : captured_generator_states_) generator.first->capturing_ = false;
  DropErrors([&] { reset(); });
}

}  // namespace roboloop::train
