// Entry point of libroboloop_torch.so: the runtime description and the ABI table.
#include <ATen/Parallel.h>
#include <ATen/Context.h>
#include <ATen/Version.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "train/torch/policy_abi.h"
#include "train/torch/trainer_abi.h"
#include "train/torch_api.h"

namespace {

size_t DescribeRuntime(char* buffer, size_t capacity) {
  nlohmann::json info = {
      {"libtorch_version", TORCH_VERSION},
      {"intra_op_threads", at::get_num_threads()},
      {"inter_op_threads", at::get_num_interop_threads()},
      {"omp_wait_policy", std::getenv("OMP_WAIT_POLICY") ? std::getenv("OMP_WAIT_POLICY") : ""},
      {"gomp_spincount", std::getenv("GOMP_SPINCOUNT") ? std::getenv("GOMP_SPINCOUNT") : ""},
      {"parallel_info", at::get_parallel_info()},
      {"build_config", at::show_config()},
      {"cuda_compiled", at::globalContext().hasCUDART()},
      {"cuda_toolkit", ROBOLOOP_CUDA_TOOLKIT_VERSION},
      {"cuda_architectures", ROBOLOOP_CUDA_ARCHITECTURES},
      {"cuda_available", torch::cuda::is_available()},
      {"cuda_devices", torch::cuda::device_count()},
  };
  std::string text = info.dump();
  if (capacity > 0) {
    size_t n = text.size() < capacity - 1 ? text.size() : capacity - 1;
    std::memcpy(buffer, text.data(), n);
    buffer[n] = '\0';
  }
  return text.size();
}

const RoboloopTorchApi kApi = {
    ROBOLOOP_TORCH_ABI_VERSION,
    &DescribeRuntime,
    &roboloop::train::LoadPolicyEntry,
    &roboloop::train::PolicyActEntry,
    &roboloop::train::FreePolicyEntry,
    &roboloop::train::PolicyActChunkEntry,
    &roboloop::train::TrainerCreateEntry,
    &roboloop::train::TrainerStepEntry,
    &roboloop::train::TrainerSaveEntry,
    &roboloop::train::TrainerLoadStateEntry,
    &roboloop::train::TrainerLoadWeightsEntry,
    &roboloop::train::TrainerFreeEntry,
    &roboloop::train::TrainerValidationLossEntry,
    &roboloop::train::PolicyActChunkImagesEntry,
    &roboloop::train::TrainerStageEntry,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const RoboloopTorchApi* roboloop_torch_api() {
  return &kApi;
}
