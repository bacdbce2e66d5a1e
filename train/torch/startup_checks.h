// Checks that a training setup can run on its device, made before training starts (issue 22,
// req 9): FP8 on a GPU without FP8 tensor cores, a head dim the CUDA attention kernels do not
// take, and a CUDA out-of-memory while the model, the optimizer and the first step are set up.
// Each error names the setting to change. Inside libroboloop_torch.so.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <torch/torch.h>

#include "train/torch/policy/policy_config.h"
#include "train/torch/precision.h"

namespace roboloop::train {

// Throws c10::Error naming the setting when `device` cannot train `policy` at `precision`: on
// CUDA, precision fp8 on a GPU below compute capability 8.9 (naming the GPU and its capability),
// fp8 with transformer widths that are not multiples of 16, and a transformer head dim the
// attention kernels do not take; on the CPU, fp8_scaling: rowwise. Also refuses precision fp8
// for a policy without FP8 linears (mlp).
void CheckTrainingSetup(const PolicyConfig& policy, const PrecisionOptions& precision, const torch::Device& device);

// The problem with training in FP8 on GPU `index` named `name` of compute capability
// major.minor, or nothing when it has FP8 tensor cores (8.9 and later).
std::optional<std::string> Fp8CapabilityProblem(int index, const std::string& name, int major, int minor);

// The problem with a transformer of `d_model` split over `heads` on the CUDA attention kernels
// (FlashAttention takes head dims that are multiples of 8 up to 256), or nothing.
std::optional<std::string> CudaHeadDimProblem(int64_t d_model, int64_t heads);

// The problem with the transformer widths for FP8 on CUDA (_scaled_mm needs d_model and ffn to
// be multiples of 16), or nothing.
std::optional<std::string> Fp8WidthProblem(int64_t d_model, int64_t ffn);

// What a training start-up that ran out of device memory says: the device, what was being done
// (`phase`), the model's parameter count and the memory its float32 weights, gradients and AdamW
// state take, the batch, and the settings that lower the need.
std::string StartupOutOfMemoryMessage(const std::string& device, const std::string& phase, int64_t parameters,
                                      int64_t batch, const std::string& detail);

}  // namespace roboloop::train
