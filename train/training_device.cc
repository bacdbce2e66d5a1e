// Resolution of the `device` option.
#include "train/training_device.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace roboloop::train {
namespace {

absl::StatusOr<TrainingDevice> VisibleCudaDevice(const std::string& spec, int index,
                                                 int cuda_devices) {
  if (index >= cuda_devices) {
    return absl::InvalidArgumentError(absl::StrCat(
        "device ", spec, ": needs CUDA device ", index, " but LibTorch sees ", cuda_devices,
        cuda_devices == 0 ? " (a CPU-only LibTorch, no GPU, or CUDA_VISIBLE_DEVICES empty); "
                            "use device cpu"
                          : " (one GPU per local rank: run at most that many ranks per node)"));
  }
  return TrainingDevice{true, index};
}

}  // namespace

std::string TrainingDevice::Name() const { return cuda ? absl::StrCat("cuda:", index) : "cpu"; }

std::string TrainingDevice::Backend() const { return cuda ? "nccl" : "gloo"; }

absl::StatusOr<TrainingDevice> ResolveTrainingDevice(const std::string& spec, int local_rank,
                                                     int cuda_devices) {
  if (spec.empty() || spec == "cpu") return TrainingDevice{};
  if (spec == "auto") {
    if (cuda_devices == 0) return TrainingDevice{};
    return VisibleCudaDevice(spec, local_rank, cuda_devices);
  }
  if (spec == "cuda") return VisibleCudaDevice(spec, local_rank, cuda_devices);
  absl::string_view ordinal = spec;
  int index = -1;
  if (absl::ConsumePrefix(&ordinal, "cuda:") && !ordinal.empty() &&
      std::all_of(ordinal.begin(), ordinal.end(), absl::ascii_isdigit) &&
      absl::SimpleAtoi(ordinal, &index)) {
    return VisibleCudaDevice(spec, index, cuda_devices);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("device '", spec, "' is not one of ", kTrainingDeviceForms));
}

}  // namespace roboloop::train
