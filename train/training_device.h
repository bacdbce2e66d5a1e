// Where a training rank computes (issue 6, req 4): the `device` option of a run resolved
// against the CUDA devices the process sees, and the c10d backend that goes with it.
// Torch-free, so the rule is tested on machines without a GPU; train/torch/trainer.cc asks
// LibTorch for the device count and applies it.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace roboloop::train {

// A resolved training device.
struct TrainingDevice {
  bool cuda = false;  // false: the CPU
  int index = 0;      // CUDA ordinal (cuda only)

  // LibTorch's name of the device: "cpu" or "cuda:N".
  std::string Name() const;
  // The process-group backend for gradients on this device: "nccl" on CUDA, "gloo" on the CPU.
  std::string Backend() const;
};

// The device options accepted, for messages and --help.
inline constexpr const char* kTrainingDeviceForms = "cpu, cuda, cuda:N, auto";

// Resolves `spec` for the rank with `local_rank` on a node where `cuda_devices` CUDA devices
// are visible:
// - "" or "cpu": the CPU;
// - "cuda": cuda:local_rank (one GPU per local rank, as torchrun lays them out);
// - "cuda:N": that ordinal, whatever the rank;
// - "auto": cuda:local_rank when any CUDA device is visible, else the CPU.
// InvalidArgument naming the value and the accepted forms when `spec` is none of them, and
// naming the ordinal and the visible count when the ordinal is not visible (0 visible covers
// a CPU-only LibTorch).
absl::StatusOr<TrainingDevice> ResolveTrainingDevice(const std::string& spec, int local_rank,
                                                     int cuda_devices);

// How a node runs the local ranks of a run: how many, and each one's batch.
struct RankPlacement {
  int ranks = 1;       // local ranks to start
  int batch_size = 1;  // samples per rank per step
  std::string note;    // what changed from the run's asking, for its logs; "" = nothing
};

// Places a run that asks for `ranks` local ranks of `batch_size` samples each with device `spec`
// on a node where `cuda_devices` CUDA devices are visible:
// - "auto" with 1 <= cuda_devices < ranks: cuda_devices ranks, one per GPU, each of
//   batch_size x ranks / cuda_devices samples, so the global batch stays ranks x batch_size
//   (with a note saying so); InvalidArgument naming device auto, the counts and the global
//   batch when it does not divide evenly;
// - "cuda" with cuda_devices < ranks: InvalidArgument naming the counts (one GPU per rank);
// - otherwise as asked ("auto" without a GPU: the CPU, as ResolveTrainingDevice says).
absl::StatusOr<RankPlacement> PlaceLocalRanks(const std::string& spec, int ranks, int batch_size,
                                              int cuda_devices);

}  // namespace roboloop::train
