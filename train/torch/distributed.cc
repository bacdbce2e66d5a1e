// The process group on c10d's TCPStore and the gradient buckets.
#include "train/torch/distributed.h"

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <future>
#include <string>
#include <thread>

#include <c10/util/Logging.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include "common/local_address.h"
#include "train/gloo/cpu_collectives.h"

namespace roboloop::train {
namespace {

constexpr size_t kFirstBucketBytes = size_t{1} << 20;
constexpr size_t kBucketBytes = size_t{25} << 20;

std::chrono::milliseconds Timeout(const DistributedOptions& options) {
  return std::chrono::milliseconds(static_cast<int64_t>(options.timeout_seconds * 1000));
}

// The first line of an exception's message: c10 errors append their C++ backtrace to it.
std::string FirstLine(const char* what) {
  const std::string text = what;
  return text.substr(0, text.find('\n'));
}

// "after 12.3 s (limit 60 s)": how long a failed rendezvous ran, since `start`.
std::string ElapsedOfLimit(std::chrono::steady_clock::time_point start, const DistributedOptions& options) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return c10::str("after ", std::round(elapsed * 10) / 10, " s (limit ", options.timeout_seconds, " s)");
}

c10::intrusive_ptr<c10d::Store> Rendezvous(const DistributedOptions& options) {
  const auto start = std::chrono::steady_clock::now();
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
                options.rank, " of ", options.world_size, ") did not complete ", ElapsedOfLimit(start, options),
                ": ", FirstLine(e.what()));
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

// Runs tasks one after another, in submission order, on a thread of its own. Destruction waits
// for the running task only: tasks still queued are dropped (their futures report a broken
// promise), so a group torn down after a failed peer does not sit out one timeout per bucket.
class SerialExecutor {
 public:
  SerialExecutor() : thread_([this] { Run(); }) {}
  ~SerialExecutor() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  // Queues `task`; the future holds its completion or its exception.
  std::future<void> Submit(std::function<void()> task) {
    std::packaged_task<void()> packaged(std::move(task));
    std::future<void> done = packaged.get_future();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.push_back(std::move(packaged));
    }
    changed_.notify_one();
    return done;
  }

 private:
  void Run() {
    for (;;) {
      std::packaged_task<void()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
        if (stopping_) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::packaged_task<void()>> tasks_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the members it reads exist
};

class FuturePending : public PendingCollective {
 public:
  explicit FuturePending(std::future<void> done) : done_(std::move(done)) {}
  void Wait() override { done_.get(); }

 private:
  std::future<void> done_;
};

// Gloo's collectives all run on the executor's thread, so CpuCollectives sees one caller.
class GlooProcessGroup : public ProcessGroup {
 public:
  GlooProcessGroup(std::unique_ptr<CpuCollectives> collectives, int size)
      : collectives_(std::move(collectives)), size_(size) {}
  int size() const override { return size_; }

  void AllReduceSum(torch::Tensor& tensor) override { StartAllReduceSum(tensor)->Wait(); }

  std::unique_ptr<PendingCollective> StartAllReduceSum(torch::Tensor tensor) override {
    TORCH_CHECK(tensor.device().is_cpu() && tensor.is_contiguous(),
                "gloo sums contiguous CPU tensors; got one on ", tensor.device());
    TORCH_CHECK(tensor.scalar_type() == torch::kFloat || tensor.scalar_type() == torch::kDouble,
                "gloo sums float32 or float64, got ", tensor.scalar_type());
    return std::make_unique<FuturePending>(executor_.Submit([this, tensor] {
      Collective([&] {
        if (tensor.scalar_type() == torch::kFloat) {
          collectives_->AllReduceSum(tensor.data_ptr<float>(), tensor.numel());
        } else {
          collectives_->AllReduceSum(tensor.data_ptr<double>(), tensor.numel());
        }
      });
    }));
  }

  void BroadcastFromRankZero(torch::Tensor& tensor) override {
    TORCH_CHECK(tensor.device().is_cpu() && tensor.is_contiguous(),
                "gloo broadcasts contiguous CPU tensors; got one on ", tensor.device());
    executor_
        .Submit([this, &tensor] {
          Collective([&] { collectives_->Broadcast(tensor.data_ptr(), tensor.nbytes(), /*root=*/0); });
        })
        .get();
  }

 private:
  // Runs `body`, turning Gloo's std::runtime_error into c10::Error.
  template <typename Body>
  static void Collective(const Body& body) {
    try {
      body();
    } catch (const std::runtime_error& e) {
      TORCH_CHECK(false, e.what());
    }
  }

  std::unique_ptr<CpuCollectives> collectives_;
  const int size_;
  SerialExecutor executor_;  // after collectives_: stops before they close
};

class WorkPending : public PendingCollective {
 public:
  explicit WorkPending(c10::intrusive_ptr<c10d::Work> work) : work_(std::move(work)) {}
  void Wait() override { work_->wait(); }

 private:
  c10::intrusive_ptr<c10d::Work> work_;
};

class NcclProcessGroup : public ProcessGroup {
 public:
  explicit NcclProcessGroup(c10::intrusive_ptr<c10d::ProcessGroupNCCL> backend)
      : backend_(std::move(backend)) {}
  int size() const override { return backend_->getSize(); }

  void AllReduceSum(torch::Tensor& tensor) override { StartAllReduceSum(tensor)->Wait(); }

  std::unique_ptr<PendingCollective> StartAllReduceSum(torch::Tensor tensor) override {
    std::vector<torch::Tensor> one = {std::move(tensor)};
    return std::make_unique<WorkPending>(backend_->allreduce(one));
  }

  void BroadcastFromRankZero(torch::Tensor& tensor) override {
    std::vector<torch::Tensor> one = {tensor};
    backend_->broadcast(one)->wait();
  }

 private:
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> backend_;
};

// Where Gloo listens without GLOO_SOCKET_IFNAME: this node's address on the route to
// MASTER_ADDR, which every rank reached for the rendezvous, rather than what the host name
// resolves to (often an interface the other nodes cannot reach, or none inside a container).
std::string GlooListenAddress(const DistributedOptions& options) {
  absl::StatusOr<std::string> address = LocalAddressToward(options.master_addr, options.master_port);
  TORCH_CHECK(address.ok(), "rank ", options.rank, " cannot find its address toward MASTER_ADDR (",
              address.status().message(), "); set GLOO_SOCKET_IFNAME to the interface to use");
  return *address;
}

std::unique_ptr<ProcessGroup> JoinGloo(const DistributedOptions& options,
                                       c10::intrusive_ptr<c10d::Store> store) {
  CpuCollectivesOptions gloo_options;
  gloo_options.rank = options.rank;
  gloo_options.size = options.world_size;
  gloo_options.timeout = Timeout(options);
  const char* interface = std::getenv("GLOO_SOCKET_IFNAME");
  if (interface != nullptr && *interface != '\0') {
    gloo_options.interface = interface;
  } else {
    gloo_options.hostname = GlooListenAddress(options);
  }
  TcpRendezvousStore rendezvous(std::move(store));
  const auto start = std::chrono::steady_clock::now();
  try {
    return std::make_unique<GlooProcessGroup>(ConnectCpuCollectives(gloo_options, rendezvous),
                                              options.world_size);
  } catch (const std::exception& e) {
    TORCH_CHECK(false, "process group of ", options.world_size, " ranks did not form ", ElapsedOfLimit(start, options),
                ": ", FirstLine(e.what()));
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
  // c10d logs each failed read or connect of a broken rendezvous (warnings and errors) with its C++ backtrace, while
  // the rank's error says what happened in one line: its logs are dropped unless TORCH_CPP_LOG_LEVEL asks for them.
  setenv("TORCH_CPP_LOG_LEVEL", "FATAL", /*overwrite=*/0);
  c10::initLogging();
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

// Tells the averager that autograd has accumulated one parameter's gradient.
class GradientAverager::Hook : public torch::autograd::PostAccumulateGradHook {
 public:
  Hook(GradientAverager& averager, size_t parameter) : averager_(averager), parameter_(parameter) {}
  void operator()(const torch::autograd::Variable& /*tensor*/) override {
    averager_.OnGradientAccumulated(parameter_);
  }

 private:
  GradientAverager& averager_;
  const size_t parameter_;
};

GradientAverager::GradientAverager(std::vector<torch::Tensor> parameters, ProcessGroup& group)
    : parameters_(std::move(parameters)), group_(group), slots_(parameters_.size()) {
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
  for (size_t b = 0; b < buckets_.size(); ++b) {
    Bucket& bucket_b = buckets_[b];
    int64_t numel = 0;
    for (size_t i : bucket_b.parameters) {
      slots_[i].bucket = b;
      slots_[i].offset = numel;
      numel += parameters_[i].numel();
    }
    bucket_b.flags = numel;
    for (size_t i : bucket_b.parameters) slots_[i].flag = numel++;
    const torch::Tensor& first = parameters_[bucket_b.parameters[0]];
    bucket_b.flat = torch::empty({numel}, first.options().requires_grad(false));
  }
  ResetStep();
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const torch::Tensor& p = parameters_[i];
    if (!p.requires_grad()) continue;  // frozen: never arrives, so it keeps no gradient
    TORCH_CHECK(p.is_leaf(), "parameter ", i, " is not a leaf tensor: autograd never ",
                "accumulates its gradient, so it cannot be averaged");
    TORCH_CHECK(torch::autograd::impl::post_acc_grad_hooks(p) == nullptr, "parameter ", i,
                " already has a post-accumulate-grad hook");
    torch::autograd::impl::set_post_acc_grad_hooks(p, std::make_unique<Hook>(*this, i));
    slots_[i].hooked = true;
  }
}

GradientAverager::~GradientAverager() {
  for (size_t i = 0; i < parameters_.size(); ++i) {
    if (slots_[i].hooked) torch::autograd::impl::set_post_acc_grad_hooks(parameters_[i], nullptr);
  }
}

torch::Tensor GradientAverager::SliceOf(size_t parameter) {
  const Slot& slot = slots_[parameter];
  return buckets_[slot.bucket].flat.narrow(0, slot.offset, parameters_[parameter].numel());
}

torch::Tensor GradientAverager::FlagOf(size_t parameter) {
  const Slot& slot = slots_[parameter];
  return buckets_[slot.bucket].flat.narrow(0, slot.flag, 1);
}

void GradientAverager::OnGradientAccumulated(size_t parameter) {
  std::lock_guard<std::mutex> lock(mutex_);
  Slot& slot = slots_[parameter];
  TORCH_CHECK(!slot.arrived, "the gradient of parameter ", parameter,
              " arrived twice before GradientAverager::Average(): call it after every backward");
  torch::NoGradGuard no_grad;
  SliceOf(parameter).copy_(parameters_[parameter].grad().reshape({-1}));
  FlagOf(parameter).fill_(1);
  slot.arrived = true;
  --buckets_[slot.bucket].missing;
  StartFullBuckets();
}

void GradientAverager::StartFullBuckets() {
  while (next_to_start_ < buckets_.size() && buckets_[next_to_start_].missing == 0) {
    Bucket& bucket = buckets_[next_to_start_++];
    bucket.sum = group_.StartAllReduceSum(bucket.flat);
  }
}

void GradientAverager::ResetStep() {
  for (Slot& slot : slots_) slot.arrived = false;
  for (Bucket& bucket : buckets_) bucket.missing = bucket.parameters.size();
  next_to_start_ = 0;
}

void GradientAverager::Average() {
  std::lock_guard<std::mutex> lock(mutex_);
  torch::NoGradGuard no_grad;
  for (size_t b = next_to_start_; b < buckets_.size(); ++b) {
    for (size_t i : buckets_[b].parameters) {
      if (slots_[i].arrived) continue;
      SliceOf(i).zero_();
      FlagOf(i).zero_();
    }
    buckets_[b].missing = 0;
  }
  StartFullBuckets();
  std::vector<torch::Tensor> flags;
  for (Bucket& bucket : buckets_) {
    std::unique_ptr<PendingCollective> sum = std::move(bucket.sum);
    sum->Wait();
    bucket.flat.div_(group_.size());
    flags.push_back(bucket.flat.narrow(0, bucket.flags, static_cast<int64_t>(bucket.parameters.size()))
                        .to(torch::kFloat));
  }
  const torch::Tensor used = torch::cat(flags).cpu();  // one read-back for every bucket
  const float* used_by_some_rank = used.data_ptr<float>();
  for (const Bucket& bucket : buckets_) {
    for (size_t i : bucket.parameters) {
      if (*used_by_some_rank++ == 0) continue;  // no rank's gradient: the parameter keeps what it had
      torch::Tensor& p = parameters_[i];
      torch::Tensor slice = SliceOf(i).view(p.sizes());
      if (p.grad().defined()) {
        p.mutable_grad().copy_(slice);
      } else {
        p.mutable_grad() = slice.clone();
      }
    }
  }
  ResetStep();
}

}  // namespace roboloop::train
