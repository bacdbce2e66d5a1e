// The C edge of the policy handle: every exception stops here and becomes a message that
// names the policy's file.
#include "train/torch/policy_abi.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "registry/policy_kind.h"
#include "train/torch/abi_error.h"
#include "train/torch/inference_policy.h"

struct RoboloopTorchPolicy {
  std::string path;                                         // file the policy came from
  std::unique_ptr<roboloop::train::InferencePolicy> model;  // the loaded model
};

namespace roboloop::train {
namespace {

std::string WithPath(const std::string& path, const std::string& message) {
  if (message.compare(0, path.size(), path) == 0) return message;
  return path + ": " + message;
}

std::unique_ptr<InferencePolicy> LoadModel(const std::string& path, const std::string& kind,
                                           const char* options_json) {
  struct stat info;
  TORCH_CHECK(stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode),
              "no such policy file (or not a regular file)");
  const nlohmann::json options =
      options_json == nullptr || *options_json == '\0' ? nlohmann::json::object()
                                                       : nlohmann::json::parse(options_json);
  absl::StatusOr<const registry::PolicyKind*> registered = registry::FindPolicyKind(kind);
  TORCH_CHECK(registered.ok(), registered.status().message());
  if ((*registered)->weights == registry::PolicyWeights::kTorchScriptModule) {
    return LoadTorchScriptPolicy(path, options.value("normalization", nlohmann::json()));
  }
  return LoadTrainablePolicy(path, kind, options);
}

// Policies run between env steps on small batches while the env pool's threads own the cores:
// LibTorch's intra-op threads only add wake-ups there (the quick start's 200-episode gate took
// 24.5 s on 2 intra-op threads, 7.1 s on 1; docs/training.md, "Threads"). A process that loads a
// policy runs LibTorch on one intra-op thread unless the user set OMP_NUM_THREADS.
void UseOneIntraOpThreadForInference() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* user = std::getenv("OMP_NUM_THREADS");
    if (user == nullptr || *user == '\0') at::set_num_threads(1);
  });
}

void Act(RoboloopTorchPolicy& policy, const float* obs, int batch, int obs_dim, float* actions,
         int action_dim, bool batch_invariant) {
  TORCH_CHECK(batch >= 0 && obs_dim > 0 && action_dim > 0, "bad call: batch ", batch,
              ", obs_dim ", obs_dim, ", action_dim ", action_dim);
  if (batch == 0) return;
  const torch::Tensor input =
      torch::from_blob(const_cast<float*>(obs), {batch, obs_dim}, torch::kFloat);
  const torch::Tensor output = policy.model->Forward(input, batch_invariant);
  TORCH_CHECK(output.dim() == 2 && output.size(0) == batch && output.size(1) == action_dim,
              "policy output has shape ", output.sizes(), ", expected [", batch, ", ", action_dim,
              "]");
  const torch::Tensor result = output.to(torch::kFloat).contiguous();
  std::memcpy(actions, result.data_ptr<float>(), sizeof(float) * batch * action_dim);
}

void ActChunk(RoboloopTorchPolicy& policy, const float* obs, const int32_t* history_length,
              const uint8_t* images, int image_bytes, int batch, int history, int obs_dim,
              float* actions, int chunk, int action_dim, bool batch_invariant) {
  TORCH_CHECK(batch >= 0 && obs_dim > 0 && action_dim > 0, "bad call: batch ", batch,
              ", obs_dim ", obs_dim, ", action_dim ", action_dim);
  TORCH_CHECK(history == policy.model->history() && chunk == policy.model->chunk(),
              "the policy reads ", policy.model->history(), " observation steps and writes ",
              policy.model->chunk(), " actions; the call has ", history, " and ", chunk);
  TORCH_CHECK(image_bytes == policy.model->image_bytes(), "the policy reads ", policy.model->image_bytes(),
              " bytes of camera frames per row (docs/vision.md); the call has ", image_bytes,
              image_bytes == 0 ? " (use policy_act_chunk_images)" : "");
  TORCH_CHECK(image_bytes == 0 || images != nullptr, "image_bytes is ", image_bytes, " but images is NULL");
  if (batch == 0) return;
  const torch::Tensor input =
      torch::from_blob(const_cast<float*>(obs), {batch, history, obs_dim}, torch::kFloat);
  const torch::Tensor lengths =
      torch::from_blob(const_cast<int32_t*>(history_length), {batch}, torch::kInt);
  const torch::Tensor frames =
      image_bytes == 0 ? torch::Tensor()
                       : torch::from_blob(const_cast<uint8_t*>(images), {batch, image_bytes}, torch::kUInt8);
  const torch::Tensor output = policy.model->ForwardChunk(input, lengths, frames, batch_invariant);
  TORCH_CHECK(output.dim() == 3 && output.size(0) == batch && output.size(1) == chunk &&
                  output.size(2) == action_dim,
              "policy output has shape ", output.sizes(), ", expected [", batch, ", ", chunk,
              ", ", action_dim, "]");
  const torch::Tensor result = output.to(torch::kFloat).contiguous();
  std::memcpy(actions, result.data_ptr<float>(), sizeof(float) * batch * chunk * action_dim);
}

}  // namespace

RoboloopTorchPolicy* LoadPolicyEntry(const char* path, const char* kind, const char* options_json,
                                     char* error_buf, size_t error_cap) {
  const std::string file = path == nullptr ? "" : path;
  try {
    UseOneIntraOpThreadForInference();
    auto policy = std::make_unique<RoboloopTorchPolicy>();
    policy->path = file;
    policy->model = LoadModel(file, kind == nullptr ? "" : kind, options_json);
    return policy.release();
  } catch (const c10::Error& e) {
    WriteAbiError(WithPath(file, e.what_without_backtrace()), error_buf, error_cap);
  } catch (const std::exception& e) {
    WriteAbiError(WithPath(file, e.what()), error_buf, error_cap);
  } catch (...) {
    WriteAbiError(WithPath(file, "load_policy: unknown exception"), error_buf, error_cap);
  }
  return nullptr;
}

int PolicyActEntry(RoboloopTorchPolicy* policy, const float* obs, int batch, int obs_dim,
                   float* actions, int action_dim, int batch_invariant, char* error_buf,
                   size_t error_cap) {
  if (policy == nullptr) {
    WriteAbiError("policy_act: null policy handle", error_buf, error_cap);
    return -1;
  }
  try {
    Act(*policy, obs, batch, obs_dim, actions, action_dim, batch_invariant != 0);
    return 0;
  } catch (const c10::Error& e) {
    WriteAbiError(WithPath(policy->path, e.what_without_backtrace()), error_buf, error_cap);
  } catch (const std::exception& e) {
    WriteAbiError(WithPath(policy->path, e.what()), error_buf, error_cap);
  } catch (...) {
    WriteAbiError(WithPath(policy->path, "policy_act: unknown exception"), error_buf, error_cap);
  }
  return -1;
}

int PolicyActChunkEntry(RoboloopTorchPolicy* policy, const float* obs,
                        const int32_t* history_length, int batch, int history, int obs_dim,
                        float* actions, int chunk, int action_dim, int batch_invariant,
                        char* error_buf, size_t error_cap) {
  if (policy == nullptr) {
    WriteAbiError("policy_act_chunk: null policy handle", error_buf, error_cap);
    return -1;
  }
  return PolicyActChunkImagesEntry(policy, obs, history_length, nullptr, 0, batch, history, obs_dim, actions,
                                   chunk, action_dim, batch_invariant, error_buf, error_cap);
}

int PolicyActChunkImagesEntry(RoboloopTorchPolicy* policy, const float* obs,
                              const int32_t* history_length, const uint8_t* images, int image_bytes,
                              int batch, int history, int obs_dim, float* actions, int chunk,
                              int action_dim, int batch_invariant, char* error_buf, size_t error_cap) {
  if (policy == nullptr) {
    WriteAbiError("policy_act_chunk_images: null policy handle", error_buf, error_cap);
    return -1;
  }
  try {
    ActChunk(*policy, obs, history_length, images, image_bytes, batch, history, obs_dim, actions, chunk,
             action_dim, batch_invariant != 0);
    return 0;
  } catch (const c10::Error& e) {
    WriteAbiError(WithPath(policy->path, e.what_without_backtrace()), error_buf, error_cap);
  } catch (const std::exception& e) {
    WriteAbiError(WithPath(policy->path, e.what()), error_buf, error_cap);
  }
  return -1;
}

void FreePolicyEntry(RoboloopTorchPolicy* policy) { delete policy; }

}  // namespace roboloop::train
