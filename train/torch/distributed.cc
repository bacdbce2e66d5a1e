// The process group on c10d's TCPStore and the gradient buckets.
#include "train/torch/distributed.h"

#include <chrono>
#include <cstdlib>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include "train/gloo/cpu_collectives.h"

namespace roboloop::train {
namespace {

constexpr size_t kFirstBucketBytes = size_t{1} << 20;
constexpr size_t kBucketBytes = size_t{25} << 20;

std::chrono::milliseconds Timeout(const DistributedOptions& options) {
  return std::chrono::milliseconds(static_cast<int64_t>(options.timeout_seconds * 1000));
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

// Gloo's rendezvous keys live in the job's TCPStore under their own prefix.
class TcpRendezvousStore : public RendezvousStore {
 public:
  explicit TcpRendezvousStore(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}
  void Set(const std::string& key, const std::vector<char>& value) override {
    store_->set(Key(key), std::vector<uint8_t>(value.begin(), value.end()));
  }
  std::vector<char> Get(const std::string& key) override {
    const std::vector<uint8_t> value = store_->get(Key(key));
    return std::vector<char>(value.begin(), value.end());
  }
  void Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    std::vector<std::string> prefixed;
    for (const std::string& key : keys) prefixed.push_back(Key(key));
    store_->wait(prefixed, timeout);
  }

 private:
  static std::string Key(const std::string& key) { return "roboloop/gloo/" + key; }
  c10::intrusive_ptr<c10d::Store> store_;
};

class GlooProcessGroup : public ProcessGroup {
 public:
  GlooProcessGroup(std::unique_ptr<CpuCollectives> collectives, int size)
      : collectives_(std::move(collectives)), size_(size) {}
  int size() const override { return size_; }

  void AllReduceSum(torch::Tensor& tensor) override {
    TORCH_CHECK(tensor.device().is_cpu() && tensor.is_contiguous(),
                "gloo sums contiguous CPU tensors; got one on ", tensor.device());
    try {
      if (tensor.scalar_type() == torch::kFloat) {
        collectives_->AllReduceSum(tensor.data_ptr<float>(), tensor.numel());
      } else {
        TORCH_CHECK(tensor.scalar_type() == torch::kDouble, "gloo sums float32 or float64, got ",
                    tensor.scalar_type());
        collectives_->AllReduceSum(tensor.data_ptr<double>(), tensor.numel());
      }
    } catch (const std::runtime_error& e) {
      TORCH_CHECK(false, e.what());
    }
  }

  void BroadcastFromRankZero(torch::Tensor& tensor) override {
    TORCH_CHECK(tensor.device().is_cpu() && tensor.is_contiguous(),
                "gloo broadcasts contiguous CPU tensors; got one on ", tensor.device());
    try {
      collectives_->Broadcast(tensor.data_ptr(), tensor.nbytes(), /*root=*/0);
    } catch (const std::runtime_error& e) {
      TORCH_CHECK(false, e.what());
    }
  }

 private:
  std::unique_ptr<CpuCollectives> collectives_;
  const int size_;
};

class NcclProcessGroup : public ProcessGroup {
 public:
  explicit NcclProcessGroup(c10::intrusive_ptr<c10d::ProcessGroupNCCL> backend)
      : backend_(std::move(backend)) {}
  int size() const override { return backend_->getSize(); }

  void AllReduceSum(torch::Tensor& tensor) override {
    std::vector<torch::Tensor> one = {tensor};
    backend_->allreduce(one)->wait();
  }

  void BroadcastFromRankZero(torch::Tensor& tensor) override {
    std::vector<torch::Tensor> one = {tensor};
    backend_->broadcast(one)->wait();
  }

 private:
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> backend_;
};

std::unique_ptr<ProcessGroup> JoinGloo(const DistributedOptions& options,
                                       c10::intrusive_ptr<c10d::Store> store) {
  CpuCollectivesOptions gloo_options;
  gloo_options.rank = options.rank;
  gloo_options.size = options.world_size;
  gloo_options.timeout = Timeout(options);
  const char* interface = std::getenv("GLOO_SOCKET_IFNAME");
  if (interface != nullptr && *interface != '\0') gloo_options.interface = interface;
  if (options.master_addr == "127.0.0.1" || options.master_addr == "localhost") {
    gloo_options.hostname = "127.0.0.1";
  }
  TcpRendezvousStore rendezvous(std::move(store));
  try {
    return std::make_unique<GlooProcessGroup>(ConnectCpuCollectives(gloo_options, rendezvous),
                                              options.world_size);
  } catch (const std::exception& e) {
    TORCH_CHECK(false, "process group of ", options.world_size, " ranks did not form within ",
                options.timeout_seconds, " s: ", e.what());
  }
}

std::unique_ptr<ProcessGroup> JoinNccl(const DistributedOptions& options,
                                       c10::intrusive_ptr<c10d::Store> store) {
  TORCH_CHECK(torch::cuda::is_available(), "backend nccl needs a CUDA device; LibTorch sees none");
  // Blocking waits: a collective that outlives the timeout (a rank died) throws from wait() on
  // this rank, which the step reports, instead of hanging. Values the user set are kept.
  setenv("TORCH_NCCL_BLOCKING_WAIT", "1", /*overwrite=*/0);
  auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
  nccl_options->timeout = Timeout(options);
  return std::make_unique<NcclProcessGroup>(c10::make_intrusive<c10d::ProcessGroupNCCL>(
      std::move(store), options.rank, options.world_size, nccl_options));
}

}  // namespace

std::unique_ptr<ProcessGroup> JoinProcessGroup(const DistributedOptions& options) {
  TORCH_CHECK(options.world_size >= 1 && options.rank >= 0 && options.rank < options.world_size,
              "rank ", options.rank, " is not in a world of ", options.world_size);
  TORCH_CHECK(options.backend == "gloo" || options.backend == "nccl", "unknown backend '",
              options.backend, "' (known: gloo, nccl)");
  c10::intrusive_ptr<c10d::Store> store = Rendezvous(options);
  if (options.backend == "nccl") return JoinNccl(options, std::move(store));
  return JoinGloo(options, std::move(store));
}

void BroadcastFromRankZero(ProcessGroup& group, const std::vector<torch::Tensor>& tensors) {
  torch::NoGradGuard no_grad;
  for (const torch::Tensor& tensor : tensors) {
    torch::Tensor contiguous = tensor.detach().contiguous();
    group.BroadcastFromRankZero(contiguous);
    if (!contiguous.is_same(tensor)) tensor.detach().copy_(contiguous);
  }
}

double AllReduceMean(ProcessGroup& group, double value, const torch::Device& device) {
  torch::Tensor buffer = torch::full({1}, value, torch::TensorOptions().dtype(torch::kDouble).device(device));
  group.AllReduceSum(buffer);
  return buffer.item<double>() / group.size();
}

GradientAverager::GradientAverager(std::vector<torch::Tensor> parameters, ProcessGroup& group)
    : parameters_(std::move(parameters)), group_(group) {
  size_t cap = kFirstBucketBytes;
  Bucket bucket;
  size_t bytes = 0;
  for (size_t i = parameters_.size(); i-- > 0;) {
    const torch::Tensor& p = parameters_[i];
    const bool fits = bucket.parameters.empty() ||
                      (bytes + p.nbytes() <= cap &&
                       p.scalar_type() == parameters_[bucket.parameters[0]].scalar_type() &&
                       p.device() == parameters_[bucket.parameters[0]].device());
    if (!fits) {
      buckets_.push_back(std::move(bucket));
      bucket = Bucket();
      bytes = 0;
      cap = kBucketBytes;
    }
    bucket.parameters.push_back(i);
    bytes += p.nbytes();
  }
  if (!bucket.parameters.empty()) buckets_.push_back(std::move(bucket));
  for (Bucket& b : buckets_) {
    int64_t numel = 0;
    for (size_t i : b.parameters) numel += parameters_[i].numel();
    const torch::Tensor& first = parameters_[b.parameters[0]];
    b.flat = torch::empty({numel}, first.options().requires_grad(false));
  }
}

void GradientAverager::Average() {
  torch::NoGradGuard no_grad;
  for (Bucket& bucket : buckets_) {
    int64_t offset = 0;
    for (size_t i : bucket.parameters) {
      torch::Tensor& p = parameters_[i];
      torch::Tensor slice = bucket.flat.narrow(0, offset, p.numel());
      if (p.grad().defined()) {
        slice.copy_(p.grad().reshape({-1}));
      } else {
        slice.zero_();
      }
      offset += p.numel();
    }
    group_.AllReduceSum(bucket.flat);
    bucket.flat.div_(group_.size());
    offset = 0;
    for (size_t i : bucket.parameters) {
      torch::Tensor& p = parameters_[i];
      torch::Tensor slice = bucket.flat.narrow(0, offset, p.numel()).view(p.sizes());
      if (p.grad().defined()) {
        p.mutable_grad().copy_(slice);
      } else {
        p.mutable_grad() = slice.clone();
      }
      offset += p.numel();
    }
  }
}

}  // namespace roboloop::train
