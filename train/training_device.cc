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

absl::StatusOr<RankPlacement> PlaceLocalRanks(const std::string& spec, int ranks, int batch_size,
                                              int cuda_devices) {
  const RankPlacement asked{ranks, batch_size, ""};
  if (cuda_devices >= ranks || (spec != "auto" && spec != "cuda")) return asked;
  if (spec == "cuda") {
    return absl::InvalidArgumentError(absl::StrCat(
        "device cuda: ", ranks, " ranks need ", ranks, " GPUs (one per rank) but LibTorch sees ", cuda_devices,
        "; use device auto (fewer ranks, the same global batch) or fewer ranks"));
  }
  if (cuda_devices == 0) return asked;
  const int64_t global = static_cast<int64_t>(ranks) * batch_size;
  if (global % cuda_devices != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "device auto: ", ranks, " ranks x batch_size ", batch_size, " = ", global,
        " samples per step cannot be shared evenly by the ", cuda_devices,
        " GPUs LibTorch sees; choose ranks and batch_size whose product is a multiple of ", cuda_devices));
  }
  const int per_rank = static_cast<int>(global / cuda_devices);
  return RankPlacement{cuda_devices, per_rank,
                       absl::StrCat("device auto: ", ranks, " ranks asked, ", cuda_devices,
                                    cuda_devices == 1 ? " GPU" : " GPUs", " visible: running ", cuda_devices,
                                    cuda_devices == 1 ? " rank" : " ranks", " of batch_size ", per_rank,
                                    " (global batch ", global, " kept)")};
}

}  // namespace roboloop::train
