// The process group and the gradient reducer.
#include "train/torch/distributed.h"

#include <chrono>
#include <cstdlib>

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef ROBOLOOP_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace roboloop::train {
namespace {

constexpr size_t kFirstBucketBytes = size_t{1} << 20;
constexpr size_t kBucketBytes = size_t{25} << 20;

std::chrono::milliseconds Timeout(const DistributedOptions& options) {
  return std::chrono::milliseconds(static_cast<int64_t>(options.timeout_seconds * 1000));
}

std::shared_ptr<::gloo::transport::Device> GlooDevice(const DistributedOptions& options) {
  const char* interface = std::getenv("GLOO_SOCKET_IFNAME");
  if (interface != nullptr && *interface != '\0') {
    return c10d::ProcessGroupGloo::createDeviceForInterface(interface);
  }
  if (options.master_addr == "127.0.0.1" || options.master_addr == "localhost") {
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  }
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

c10::intrusive_ptr<c10d::Store> Rendezvous(const DistributedOptions& options) {
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<uint16_t>(options.master_port);
  store_options.isServer = options.rank == 0;
  store_options.numWorkers = static_cast<size_t>(options.world_size);
  store_options.waitWorkers = true;
  store_options.timeout = Timeout(options);
  try {
    return c10::make_intrusive<c10d::TCPStore>(options.master_addr, store_options);
  } catch (const std::exception& e) {
    TORCH_CHECK(false, "rendezvous at ", options.master_addr, ":", options.master_port, " (rank ",
                options.rank, " of ", options.world_size, ") did not complete within ",
                options.timeout_seconds, " s: ", e.what());
  }
}

}  // namespace

c10::intrusive_ptr<c10d::ProcessGroup> JoinProcessGroup(const DistributedOptions& options) {
  TORCH_CHECK(options.world_size >= 1 && options.rank >= 0 && options.rank < options.world_size,
              "rank ", options.rank, " is not in a world of ", options.world_size);
  c10::intrusive_ptr<c10d::Store> store = Rendezvous(options);
  if (options.backend == "nccl") {
#ifdef ROBOLOOP_WITH_NCCL
    // Blocking waits: a collective that outlives the timeout (a rank died) throws from wait()
    // on this rank, which the step reports, instead of hanging. Values the user set are kept.
    setenv("NCCL_BLOCKING_WAIT", "1", /*overwrite=*/0);
    setenv("TORCH_NCCL_BLOCKING_WAIT", "1", /*overwrite=*/0);
    auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
    nccl_options->timeout = Timeout(options);
    return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, options.rank, options.world_size,
                                                       nccl_options);
#else
    TORCH_CHECK(false, "backend nccl: this LibTorch has no CUDA; use gloo");
#endif
  }
  TORCH_CHECK(options.backend == "gloo", "unknown backend '", options.backend,
              "' (known: gloo, nccl)");
  auto gloo_options = c10d::ProcessGroupGloo::Options::create();
  gloo_options->timeout = Timeout(options);
  gloo_options->devices.push_back(GlooDevice(options));
  try {
    return c10::make_intrusive<c10d::ProcessGroupGloo>(store, options.rank, options.world_size,
                                                       gloo_options);
  } catch (const std::exception& e) {
    TORCH_CHECK(false, "process group of ", options.world_size, " ranks did not form within ",
                options.timeout_seconds, " s: ", e.what());
  }
}

void BroadcastFromRankZero(c10d::ProcessGroup& group, std::vector<torch::Tensor> tensors) {
  torch::NoGradGuard no_grad;
  for (torch::Tensor& tensor : tensors) {
    std::vector<torch::Tensor> one = {tensor.detach()};
    group.broadcast(one)->wait();
  }
}

double AllReduceMean(c10d::ProcessGroup& group, double value, const torch::Device& device) {
  std::vector<torch::Tensor> buffer = {
      torch::full({1}, value, torch::TensorOptions().dtype(torch::kDouble).device(device))};
  group.allreduce(buffer)->wait();
  return buffer[0].item<double>() / group.getSize();
}

std::unique_ptr<c10d::Reducer> MakeGradientReducer(const std::vector<torch::Tensor>& parameters,
                                                   c10::intrusive_ptr<c10d::ProcessGroup> group) {
  const std::vector<bool> sparse(parameters.size(), false);
  auto [buckets, limits] = c10d::compute_bucket_assignment_by_size(
      parameters, {kFirstBucketBytes, kBucketBytes}, sparse);
  std::reverse(buckets.begin(), buckets.end());
  std::reverse(limits.begin(), limits.end());
  return std::make_unique<c10d::Reducer>(parameters, std::move(buckets), std::move(limits),
                                         std::move(group), sparse,
                                         static_cast<int64_t>(kBucketBytes),
                                         /*find_unused_parameters=*/false,
                                         /*gradient_as_bucket_view=*/false,
                                         std::unordered_map<size_t, std::string>(),
                                         static_cast<int64_t>(kFirstBucketBytes));
}

}  // namespace roboloop::train
