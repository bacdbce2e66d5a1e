// Helpers of the vision policy tests (issue 23, req 4): the torch library's ABI table (for the
// ABI-5 entries, called directly), camera frames with a bright square, and a loaded policy
// called through policy_act_chunk_images.
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "train/torch_api.h"
#include "train/torch_runtime.h"

namespace roboloop::train::testing {

// The table of the library TorchRuntime::Load mapped (the same mapping, not a second copy).
inline const RoboloopTorchApi* LoadedTorchApi() {
  absl::StatusOr<const TorchRuntime*> runtime = TorchRuntime::Load();
  if (!runtime.ok()) return nullptr;
  void* library = dlopen((*runtime)->path().c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (library == nullptr) return nullptr;
  const auto entry = reinterpret_cast<RoboloopTorchEntryFn>(dlsym(library, ROBOLOOP_TORCH_ENTRY_POINT));
  return entry == nullptr ? nullptr : entry();
}

// `batch` random frames of `bytes` bytes each, back to back.
inline std::vector<uint8_t> RandomFrames(int batch, int bytes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> value(0, 255);
  std::vector<uint8_t> frames(static_cast<size_t>(batch) * bytes);
  for (uint8_t& v : frames) v = static_cast<uint8_t>(value(rng));
  return frames;
}

// A policy loaded through the ABI table; frees it on destruction.
class AbiPolicy {
 public:
  AbiPolicy(const RoboloopTorchApi* api, const std::string& path, const std::string& kind,
            const std::string& options_json)
      : api_(api) {
    char error[1024] = "";
    handle_ = api_->load_policy(path.c_str(), kind.c_str(), options_json.c_str(), error, sizeof(error));
    error_ = error;
  }
  ~AbiPolicy() { api_->free_policy(handle_); }
  AbiPolicy(const AbiPolicy&) = delete;
  AbiPolicy& operator=(const AbiPolicy&) = delete;

  bool ok() const { return handle_ != nullptr; }
  const std::string& error() const { return error_; }

  // policy_act_chunk_images; returns its status code and keeps its message in error().
  int ActImages(const float* obs, const int32_t* lengths, const uint8_t* images, int image_bytes, int batch,
                int history, int obs_dim, float* actions, int chunk, int action_dim, bool batch_invariant) {
    char error[1024] = "";
    const int rc = api_->policy_act_chunk_images(handle_, obs, lengths, images, image_bytes, batch, history,
                                                 obs_dim, actions, chunk, action_dim, batch_invariant ? 1 : 0,
                                                 error, sizeof(error));
    error_ = error;
    return rc;
  }

 private:
  const RoboloopTorchApi* api_;
  RoboloopTorchPolicy* handle_ = nullptr;
  std::string error_;
};

}  // namespace roboloop::train::testing
