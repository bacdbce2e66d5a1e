// CUDA path of the varlen attention ops: index vectors and work items to the device, then the
// torch-free launchers on LibTorch's current stream.
#include "kernels/cuda/varlen_attention_cuda.h"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <vector>

#include "kernels/cuda/attention_cuda.h"

namespace roboloop::kernels::cuda {
namespace {

static_assert(sizeof(TileItem) == 3 * sizeof(int32_t), "TileItem is copied as int32 triples");

// The shape with its index vectors and tile list on the device; owns the device copies.
struct DeviceIndex {
  torch::Tensor cu_seqlens, prefix_lengths, items;
  AttentionShape shape;
  DeviceTiles tiles;
};

torch::Tensor Int32ToDevice(const int32_t* host, int64_t count, const torch::Device& device) {
  return torch::from_blob(const_cast<int32_t*>(host), {count}, torch::kInt).to(device);
}

DeviceIndex CopyIndex(const AttentionShape& host, const torch::Device& device) {
  DeviceIndex index;
  index.cu_seqlens = Int32ToDevice(host.cu_seqlens, host.batch + 1, device);
  index.prefix_lengths = UsesPrefix(host.mask)
                             ? Int32ToDevice(host.prefix_lengths, host.batch, device)
                             : torch::zeros({1}, torch::dtype(torch::kInt).device(device));
  const std::vector<TileItem> items = EnumerateTiles(host);
  const int64_t count = static_cast<int64_t>(items.size());
  index.items = Int32ToDevice(reinterpret_cast<const int32_t*>(items.data()), 3 * count, device);
  index.shape = host;
  index.shape.cu_seqlens = index.cu_seqlens.data_ptr<int32_t>();
  index.shape.prefix_lengths = index.prefix_lengths.data_ptr<int32_t>();
  index.tiles.items = reinterpret_cast<const TileItem*>(index.items.data_ptr<int32_t>());
  index.tiles.count = count;
  return index;
}

void ThrowIfFailed(const CudaOutcome& outcome) {
  TORCH_CHECK(outcome.ok(), "varlen attention on CUDA: ", outcome.error);
}

}  // namespace

void ForwardOnDevice(const ForwardArgs& args, const torch::Device& device) {
  c10::cuda::CUDAGuard guard(device);
  const DeviceIndex index = CopyIndex(args.shape, device);
  ForwardArgs on_device = args;
  on_device.shape = index.shape;
  ThrowIfFailed(CudaAttentionForward(on_device, index.tiles,
                                     c10::cuda::getCurrentCUDAStream().stream()));
}

void BackwardOnDevice(const BackwardArgs& args, const float* out, float* row_dots,
                      int64_t total_tokens, const torch::Device& device) {
  c10::cuda::CUDAGuard guard(device);
  const DeviceIndex index = CopyIndex(args.shape, device);
  BackwardArgs on_device = args;
  on_device.shape = index.shape;
  ThrowIfFailed(CudaAttentionBackward(on_device, out, row_dots, total_tokens, index.tiles,
                                      c10::cuda::getCurrentCUDAStream().stream()));
}

}  // namespace roboloop::kernels::cuda
