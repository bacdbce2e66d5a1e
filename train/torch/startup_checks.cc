// The start-up checks of training on a device.
#include "train/torch/startup_checks.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/util/Exception.h>

#include <cmath>
#include <sstream>

namespace roboloop::train {
namespace {

// FlashAttention's limits, which the CUDA attention path must respect.
constexpr int64_t kMaxHeadDim = 256;
constexpr int64_t kHeadDimMultiple = 8;
constexpr int64_t kFp8WidthMultiple = 16;  // _scaled_mm's K and N on CUDA

void Require(const std::optional<std::string>& problem) { TORCH_CHECK(!problem.has_value(), problem.value_or("")); }

}  // namespace

std::optional<std::string> Fp8CapabilityProblem(int index, const std::string& name, int major, int minor) {
  if (major > 8 || (major == 8 && minor >= 9)) return std::nullopt;
  std::ostringstream out;
  out << "trainer option precision: fp8 needs FP8 tensor cores (compute capability 8.9 or later: Ada, Hopper, "
      << "Blackwell), but cuda:" << index << " is " << name << " of compute capability " << major << "." << minor
      << "; use precision: bf16";
  return out.str();
}

std::optional<std::string> CudaHeadDimProblem(int64_t d_model, int64_t heads) {
  const int64_t head_dim = d_model / heads;
  if (head_dim <= kMaxHeadDim && head_dim % kHeadDimMultiple == 0) return std::nullopt;
  std::ostringstream out;
  out << "policy options d_model " << d_model << " / heads " << heads << " give head dim " << head_dim
      << ", which the CUDA attention kernels do not take (a multiple of " << kHeadDimMultiple << " up to "
      << kMaxHeadDim << "); change d_model or heads";
  return out.str();
}

std::optional<std::string> Fp8WidthProblem(int64_t d_model, int64_t ffn) {
  if (d_model % kFp8WidthMultiple == 0 && ffn % kFp8WidthMultiple == 0) return std::nullopt;
  std::ostringstream out;
  out << "trainer option precision: fp8 on CUDA needs policy options d_model (" << d_model << ") and ffn (" << ffn
      << ") to be multiples of " << kFp8WidthMultiple << " (the FP8 GEMM's alignment)";
  return out.str();
}

std::string StartupOutOfMemoryMessage(const std::string& device, const std::string& phase, int64_t parameters,
                                      int64_t batch, const std::string& detail) {
  // float32 weights, gradients and AdamW's two moments: 16 bytes a parameter.
  const int64_t state_mib = std::llround(static_cast<double>(parameters) * 16.0 / (1 << 20));
  std::ostringstream out;
  out << device << " ran out of memory " << phase << ": the model has " << parameters << " parameters ("
      << state_mib << " MiB of float32 weights, gradients and AdamW state)";
  if (batch > 0) out << " and the batch has " << batch << " samples";
  out << ". Lower batch_size or token_budget, use precision: bf16 (or fp8), a smaller policy (d_model, layers, ffn), "
      << "or spread the batch over more GPUs (--nproc-per-node). " << detail;
  return out.str();
}

void CheckTrainingSetup(const PolicyConfig& policy, const PrecisionOptions& precision, const torch::Device& device) {
  const bool fp8 = precision.precision == Precision::kFp8;
  const bool transformer = policy.kind == "transformer";
  TORCH_CHECK(!fp8 || transformer, "trainer option precision: fp8 runs the transformer's linears in FP8; policy ",
              policy.kind, " has none (use precision: bf16)");
  TORCH_CHECK(!fp8 || precision.fp8_scaling != Fp8Scaling::kRowwise || device.is_cuda(),
              "trainer option fp8_scaling: rowwise runs on CUDA only; on the ", device.str(),
              " use fp8_scaling: tensorwise");
  if (!device.is_cuda()) return;
  if (transformer) {
    const int64_t d_model = policy.options.at("d_model").get<int64_t>();
    Require(CudaHeadDimProblem(d_model, policy.options.at("heads").get<int64_t>()));
    if (fp8) Require(Fp8WidthProblem(d_model, policy.options.at("ffn").get<int64_t>()));
  }
  if (fp8) {
    const c10::DeviceIndex index = device.has_index() ? device.index() : at::cuda::current_device();
    const cudaDeviceProp* properties = at::cuda::getDeviceProperties(index);
    Require(Fp8CapabilityProblem(index, properties->name, properties->major, properties->minor));
  }
}

}  // namespace roboloop::train
