// Data-parallel plumbing (docs/training.md, "Data parallel"): the process group of a training job
// on c10d's TCPStore, with Gloo collectives on the CPU (Debian's libgloo in isolation:
// train/gloo/cpu_collectives.h) and LibTorch's ProcessGroupNCCL backend on CUDA, and gradient
// averaging over buckets of gradients. Inside libroboloop_torch.so.
#pragma once

#include <memory>
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

// The collectives of one rank on its device's tensors. Calls come from one thread, in the same
// order on every rank; a failed peer or a passed timeout throws c10::Error naming the operation.
class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  // Ranks in the job.
  virtual int size() const = 0;
  // Sums a contiguous float32 or float64 tensor over the ranks in place; every rank gets the
  // same bits.
  virtual void AllReduceSum(torch::Tensor& tensor) = 0;
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

// Averages the gradients of `parameters` over the ranks after backward: gradients are copied into
// flat buckets (DDP's sizes: 1 MiB first, then 25 MiB, in reverse parameter order, the order
// backward produces them), each bucket is summed across ranks and scaled by 1/size, and copied
// back. A parameter without a gradient this step counts as a zero gradient. Not thread-safe.
class GradientAverager {
 public:
  GradientAverager(std::vector<torch::Tensor> parameters, ProcessGroup& group);
  // Averages every parameter's gradient in place; call after backward, before clipping.
  void Average();

 private:
  struct Bucket {
    std::vector<size_t> parameters;  // indices into parameters_
    torch::Tensor flat;              // this bucket's gradients, back to back
  };
  std::vector<torch::Tensor> parameters_;
  ProcessGroup& group_;
  std::vector<Bucket> buckets_;
};

}  // namespace roboloop::train
