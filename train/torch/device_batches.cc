// Host batches to CPU tensors, or through pinned staging buffers and a side stream to a GPU.
#include "train/torch/device_batches.h"

#include <c10/cuda/CUDAGuard.h>

#include <cstring>

#include "train/torch/trainer.h"

namespace roboloop::train {
namespace {

// Where one array of a batch lies in the staging buffer.
struct Part {
  const void* source = nullptr;
  int64_t bytes = 0;
  int64_t offset = 0;
};

// Each array starts on a boundary this wide, so that any dtype can view its bytes.
constexpr int64_t kPartAlignment = 64;

// The batch's arrays back to back (obs, history_length, actions, action_valid, images).
std::array<Part, 5> Parts(const BatchArrays& b) {
  const int64_t n = b.batch;
  std::array<Part, 5> parts = {{
      {b.obs, n * b.history * b.obs_dim * static_cast<int64_t>(sizeof(float))},
      {b.history_length, n * static_cast<int64_t>(sizeof(int32_t))},
      {b.actions, n * b.chunk * b.action_dim * static_cast<int64_t>(sizeof(float))},
      {b.action_valid, n * b.chunk},
      {b.images, b.images == nullptr ? 0 : n * b.image_bytes},
  }};
  int64_t offset = 0;
  for (Part& part : parts) {
    part.offset = offset;
    offset += (part.bytes + kPartAlignment - 1) / kPartAlignment * kPartAlignment;
  }
  return parts;
}

int64_t TotalBytes(const std::array<Part, 5>& parts) { return parts.back().offset + parts.back().bytes; }

torch::Tensor PartView(const torch::Tensor& bytes, const Part& part, torch::ScalarType type,
                       std::vector<int64_t> shape) {
  return bytes.narrow(0, part.offset, part.bytes).view(type).view(shape);
}

// The arrays of `b` as views of `bytes`, laid out by Parts(b).
BatchTensors PartViews(const torch::Tensor& bytes, const BatchArrays& b) {
  const std::array<Part, 5> parts = Parts(b);
  BatchTensors t;
  t.obs = PartView(bytes, parts[0], torch::kFloat, {b.batch, b.history, b.obs_dim});
  t.history_length = PartView(bytes, parts[1], torch::kInt, {b.batch});
  t.actions = PartView(bytes, parts[2], torch::kFloat, {b.batch, b.chunk, b.action_dim});
  t.action_valid = PartView(bytes, parts[3], torch::kUInt8, {b.batch, b.chunk});
  if (b.images != nullptr) t.images = PartView(bytes, parts[4], torch::kUInt8, {b.batch, b.image_bytes});
  return t;
}

torch::Tensor CpuCopy(const void* data, std::vector<int64_t> shape, torch::ScalarType type) {
  return torch::from_blob(const_cast<void*>(data), shape, type).clone();
}

}  // namespace

BatchTensors CopyBatchToCpu(const BatchArrays& b) {
  BatchTensors t;
  t.obs = CpuCopy(b.obs, {b.batch, b.history, b.obs_dim}, torch::kFloat);
  t.history_length = CpuCopy(b.history_length, {b.batch}, torch::kInt);
  t.actions = CpuCopy(b.actions, {b.batch, b.chunk, b.action_dim}, torch::kFloat);
  t.action_valid = CpuCopy(b.action_valid, {b.batch, b.chunk}, torch::kUInt8);
  if (b.images != nullptr) t.images = CpuCopy(b.images, {b.batch, b.image_bytes}, torch::kUInt8);
  return t;
}

CudaBatchStaging::CudaBatchStaging(const torch::Device& device)
    : device_(device), side_(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index())) {}

CudaBatchStaging::Slot& CudaBatchStaging::FreeSlot() {
  Slot* oldest = &slots_.front();
  for (Slot& slot : slots_) {
    if (!slot.staged) return slot;
    if (slot.order < oldest->order) oldest = &slot;
  }
  return *oldest;
}

CudaBatchStaging::BatchKey CudaBatchStaging::KeyOf(const BatchArrays& b) {
  return BatchKey{{b.obs, b.history_length, b.actions, b.action_valid, b.images},
                  {b.batch, b.history, b.chunk, b.obs_dim, b.action_dim, b.image_bytes}};
}

CudaBatchStaging::Slot* CudaBatchStaging::StagedSlot(const BatchArrays& b, int64_t step) {
  const BatchKey key = KeyOf(b);
  for (Slot& slot : slots_) {
    if (slot.staged && slot.step == step && slot.key == key) return &slot;
  }
  return nullptr;
}

void CudaBatchStaging::Stage(const BatchArrays& b, int64_t step) {
  Slot& slot = FreeSlot();
  slot.copied.synchronize();  // the last copy out of this pinned buffer is over
  const std::array<Part, 5> parts = Parts(b);
  const int64_t total = TotalBytes(parts);
  if (!slot.pinned.defined() || slot.pinned.numel() < total) {
    slot.pinned = torch::empty({total}, torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(true));
  }
  uint8_t* host = slot.pinned.data_ptr<uint8_t>();
  for (const Part& part : parts) {
    if (part.bytes > 0) std::memcpy(host + part.offset, part.source, part.bytes);
  }
  {
    const c10::cuda::CUDAStreamGuard on_side_stream(side_);
    slot.device = slot.pinned.narrow(0, 0, total).to(device_, /*non_blocking=*/true);
    slot.copied.record(side_);
  }
  slot.staged = true;
  slot.step = step;
  slot.order = ++staged_count_;
  slot.key = KeyOf(b);
}

BatchTensors CudaBatchStaging::Take(const BatchArrays& b, int64_t step) {
  Slot* slot = StagedSlot(b, step);
  if (slot == nullptr) {
    Stage(b, step);
    slot = StagedSlot(b, step);
  }
  const c10::cuda::CUDAStream compute = c10::cuda::getCurrentCUDAStream(device_.index());
  slot->copied.block(compute);
  slot->device.record_stream(compute);
  slot->staged = false;
  const torch::Tensor bytes = slot->device;
  slot->device.reset();
  return PartViews(bytes, b);
}

}  // namespace roboloop::train
