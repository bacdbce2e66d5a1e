#include "kernels/host_to_device.h"

namespace roboloop::kernels {
namespace {

template <typename T>
torch::Tensor CopyOn(const std::vector<T>& values, torch::ScalarType source_type, torch::ScalarType dtype,
                     const torch::Device& device) {
  const torch::Tensor view = torch::from_blob(const_cast<T*>(values.data()),
                                              {static_cast<int64_t>(values.size())}, source_type);
  if (!device.is_cuda()) return view.to(dtype, /*non_blocking=*/false, /*copy=*/true);
  torch::Tensor pinned = torch::empty(view.sizes(), torch::TensorOptions().dtype(dtype).pinned_memory(true));
  pinned.copy_(view);  // the one host copy, converting as it goes
  return OnDeviceWithoutWaiting(pinned, device);
}

}  // namespace

torch::Tensor OnDeviceWithoutWaiting(const torch::Tensor& t, const torch::Device& device) {
  if (t.device() == device) return t;
  if (!device.is_cuda() || !t.is_cpu()) return t.to(device);
  return (t.is_pinned() ? t : t.pin_memory()).to(device, /*non_blocking=*/true);
}

torch::Tensor IndexTensorOn(const std::vector<int32_t>& values, torch::ScalarType dtype, const torch::Device& device) {
  return CopyOn(values, torch::kInt, dtype, device);
}

torch::Tensor IndexTensorOn(const std::vector<int64_t>& values, torch::ScalarType dtype, const torch::Device& device) {
  return CopyOn(values, torch::kLong, dtype, device);
}

}  // namespace roboloop::kernels
