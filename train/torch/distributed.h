// Data-parallel plumbing on torch's c10d (issue 6, req 4): the process group of a training
// job and gradient averaging through c10d::Reducer (PyTorch DDP's bucketing engine, which
// all-reduces gradient buckets while backward is still running). Inside libroboloop_torch.so.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>
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
  std::string backend = "gloo";        // "gloo" (CPU tensors) or "nccl" (CUDA tensors; CUDA builds)
};

// Joins the job: rank 0 serves a TCPStore, the others connect, then a Gloo (or NCCL) process
// group is built over it. Throws c10::Error naming the address and the timeout when the
// rendezvous does not complete in time, or naming the backend when it is not built in.
c10::intrusive_ptr<c10d::ProcessGroup> JoinProcessGroup(const DistributedOptions& options);

// Broadcasts `tensors` from rank 0 in place (the initial weights of every replica).
void BroadcastFromRankZero(c10d::ProcessGroup& group, std::vector<torch::Tensor> tensors);

// Mean of `value` over the ranks of `group`, reduced in a tensor on `device` (the device the
// group's backend works on: the CPU for Gloo, the rank's GPU for NCCL).
double AllReduceMean(c10d::ProcessGroup& group, double value, const torch::Device& device);

// A reducer over `parameters` with DDP's bucket sizes (1 MiB first bucket, then 25 MiB), in
// reverse parameter order as gradients become ready. Call PrepareForBackward before each
// backward; after it the gradients are averaged across ranks.
std::unique_ptr<c10d::Reducer> MakeGradientReducer(const std::vector<torch::Tensor>& parameters,
                                                   c10::intrusive_ptr<c10d::ProcessGroup> group);

}  // namespace roboloop::train
