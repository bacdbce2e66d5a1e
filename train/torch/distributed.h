// Data-parallel plumbing (docs/training.md, "Data parallel"): the process group of a training job
// on c10d's TCPStore, with Gloo collectives on the CPU (Debian's libgloo in isolation:
// train/gloo/cpu_collectives.h) and LibTorch's ProcessGroupNCCL backend on CUDA, and gradient
// averaging over buckets of gradients. Inside libroboloop_torch.so.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace roboloop::train {

// Where a rank finds the others.
struct DistributedOptions {
  int rank = 0;                        // this rank, 0..world_size-1
  int world_size = 1;                  // ranks in the job; 1 = no process group at all
  int local_rank = 0;                  // this rank's index on its node (picks its GPU)
  std::string master_addr = "127.0.0.1";  // host of rank 0's TCPStore
  int master_port = 29500;             // port of rank 0's TCPStore
  double timeout_seconds = 30;         // rendezvous and collective timeout
  std::string backend = "gloo";        // "gloo" (CPU tensors) or "nccl" (CUDA tensors)
};

// A collective that was started and may still be running.
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  // Returns once the collective's result is in its tensor (for CUDA tensors: ordered before
  // later work on the caller's current stream). Throws c10::Error as the blocking call would.
  virtual void Wait() = 0;
};

// The collectives of one rank on its device's tensors. Collectives start in the same order on
// every rank and never from two threads at once; a failed peer or a passed timeout throws
// c10::Error naming the operation.
class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  // Ranks in the job.
  virtual int size() const = 0;
  // Sums a contiguous float32 or float64 tensor over the ranks in place; every rank gets the
  // same bits.
  virtual void AllReduceSum(torch::Tensor& tensor) = 0;
  // Starts AllReduceSum on `tensor` and returns without waiting for it (Gloo: on the group's
  // own communication thread, one collective after another in start order; NCCL: on its
  // stream). The tensor must stay alive and unchanged until Wait() returns. Errors in the
  // arguments throw here, those of the collective from Wait().
  virtual std::unique_ptr<PendingCollective> StartAllReduceSum(torch::Tensor tensor) = 0;
  // Overwrites a contiguous tensor with rank 0's.
  virtual void BroadcastFromRankZero(torch::Tensor& tensor) = 0;
};

// Joins the job: rank 0 serves a TCPStore, the others connect, then the backend's ranks connect.
// Throws c10::Error naming the address and the timeout when the rendezvous does not complete in
// time, or naming the backend when it is unknown.
std::unique_ptr<ProcessGroup> JoinProcessGroup(const DistributedOptions& options);

// Broadcasts `tensors` from rank 0 in place (the initial weights of every replica).
void BroadcastFromRankZero(ProcessGroup& group, const std::vector<torch::Tensor>& tensors);

// Mean of `value` over the ranks of `group`, reduced in a tensor on `device` (the device the
// group's backend works on: the CPU for Gloo, the rank's GPU for NCCL).
double AllReduceMean(ProcessGroup& group, double value, const torch::Device& device);

// Averages the gradients of `parameters` over the ranks, overlapped with backward: gradients
// are gathered into flat buckets (DDP's sizes: 1 MiB first, then 25 MiB, in reverse parameter
// order, the order backward produces them); a hook that runs once a parameter's gradient is
// accumulated copies it into its bucket, and a bucket whose gradients are all in starts its
// sum across ranks at once, while backward goes on. Buckets start in bucket order on every
// rank: a full bucket waits for the ones before it. Average() then starts the buckets still
// incomplete, counting a parameter without a gradient this step as a zero gradient, waits for
// every sum, scales it by 1/size and copies it back: the same bits as summing each bucket
// after backward. A parameter that no rank gave a gradient this step keeps the gradient it had
// (none, after zero_grad), as one rank would and as DDP does, so that the optimizer skips it
// rather than decaying it: each bucket sums a used flag per parameter with its gradients.
// Hooks and Average() may run on different threads (autograd's device threads); they are
// serialised here.
class GradientAverager {
 public:
  // Installs the hooks on the parameters that require a gradient (the others never arrive);
  // throws c10::Error naming the parameter when one of those is not a leaf or already has a
  // post-accumulate-grad hook.
  GradientAverager(std::vector<torch::Tensor> parameters, ProcessGroup& group);
  // Removes the hooks.
  ~GradientAverager();
  GradientAverager(const GradientAverager&) = delete;
  GradientAverager& operator=(const GradientAverager&) = delete;
  // Completes the averaging of this backward's gradients in place; call once after each
  // backward, before clipping. Throws c10::Error from a failed collective.
  void Average();

 private:
  class Hook;
  struct Bucket {
    std::vector<size_t> parameters;  // indices into parameters_
    torch::Tensor flat;              // this bucket's gradients, back to back, then one used flag
                                     // per parameter (1 where its gradient arrived), summed with them
    int64_t flags = 0;               // offset of the flags in flat
    size_t missing = 0;              // parameters whose gradient has not arrived this step
    std::unique_ptr<PendingCollective> sum;  // the started sum, until Average() waits for it
  };
  struct Slot {
    size_t bucket = 0;   // index into buckets_
    int64_t offset = 0;  // first element in the bucket's flat tensor
    int64_t flag = 0;    // its used flag in the bucket's flat tensor
    bool arrived = false;  // its gradient is in the bucket this step
    bool hooked = false;   // this averager installed its hook
  };
  void OnGradientAccumulated(size_t parameter);
  void StartFullBuckets();
  void ResetStep();
  torch::Tensor SliceOf(size_t parameter);
  torch::Tensor FlagOf(size_t parameter);

  std::vector<torch::Tensor> parameters_;
  ProcessGroup& group_;
  std::vector<Bucket> buckets_;
  std::vector<Slot> slots_;  // per parameter
  size_t next_to_start_ = 0;  // buckets before it have started this step
  std::mutex mutex_;
};

}  // namespace roboloop::train
