// Host batches on their way to the trainer's device (issue 22, req 5; issue 28, req 3): on the
// CPU a copy of the arrays; on a CUDA device a pipeline of pinned (page-locked) staging
// buffers whose non-blocking copies run on a side stream while the compute stream works, the
// compute stream waiting for a batch's copy only when a step takes it. Inside libroboloop_torch.
#pragma once

#include <array>
#include <cstdint>

#include <c10/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

namespace roboloop::train {

struct BatchArrays;  // train/torch/trainer.h

// A batch's arrays as tensors of their own dtypes on one device.
struct BatchTensors {
  torch::Tensor obs;             // float [batch, history, obs_dim]
  torch::Tensor history_length;  // int32 [batch]
  torch::Tensor actions;         // float [batch, chunk, action_dim]
  torch::Tensor action_valid;    // uint8 [batch, chunk]
  torch::Tensor images;          // uint8 [batch, image_bytes]; undefined without images
};

// CPU tensors holding copies of `batch`'s arrays (the caller may free them afterwards).
BatchTensors CopyBatchToCpu(const BatchArrays& batch);

// The staging pipeline of one CUDA device. Each batch is copied into a pinned host buffer, and
// from there to the device by one non-blocking copy on a side stream, after which an event is
// recorded; a step that takes the batch makes the compute stream (the device's current stream)
// wait for that event. With kSlots buffers, the batch of the next step is copied while the
// current step runs. Not thread-safe (the trainer's thread only).
class CudaBatchStaging {
 public:
  // Batches in flight at most: the one a step is using and the next one being copied.
  static constexpr int kSlots = 2;

  // Staging for CUDA `device`, with a side stream of its own from LibTorch's pool.
  explicit CudaBatchStaging(const torch::Device& device);

  // Starts copying `batch`, the batch of global step `step`, to the device and returns
  // without waiting for the copy: the arrays are read (into pinned memory) before it returns.
  // When every slot holds a batch no step has taken yet, the one staged first is dropped.
  // Throws c10::Error when pinned or device memory cannot be had.
  void Stage(const BatchArrays& batch, int64_t step);

  // The device tensors of `batch` for global step `step`: its staged copy when Stage was
  // called with this step and these arrays (the same pointers and dimensions), else one staged
  // now. Work queued on the compute stream afterwards runs after the copy, and the tensors'
  // memory is kept from reuse until the compute stream's work on them is done.
  BatchTensors Take(const BatchArrays& batch, int64_t step);

 private:
  // What identifies a staged batch: its arrays' addresses and its dimensions.
  struct BatchKey {
    std::array<const void*, 5> arrays{};  // obs, history_length, actions, action_valid, images
    std::array<int, 6> dims{};  // batch, history, chunk, obs_dim, action_dim, image_bytes
    bool operator==(const BatchKey& other) const { return arrays == other.arrays && dims == other.dims; }
  };
  static BatchKey KeyOf(const BatchArrays& batch);

  // One batch in flight: its pinned source, its device copy and the event that ends the copy.
  struct Slot {
    torch::Tensor pinned;        // uint8, page-locked; reused while large enough
    torch::Tensor device;        // uint8 copy of the batch's bytes on the device
    c10::cuda::CUDAEvent copied;  // recorded on the side stream after the copy
    bool staged = false;         // holds a batch no step has taken yet
    int64_t step = 0;            // the global step it was staged for
    uint64_t order = 0;          // staging order, for dropping the oldest
    BatchKey key;                // the batch it holds
  };

  Slot& FreeSlot();
  Slot* StagedSlot(const BatchArrays& batch, int64_t step);

  const torch::Device device_;
  const c10::cuda::CUDAStream side_;
  std::array<Slot, kSlots> slots_;
  uint64_t staged_count_ = 0;
};

}  // namespace roboloop::train
