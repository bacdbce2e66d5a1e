// The policy entries of libroboloop_torch.so (declared in train/torch_api.h); the
// table in runtime_info.cc points at them.
#pragma once

#include "train/torch_api.h"

namespace roboloop::train {

// See RoboloopTorchApi::load_policy.
RoboloopTorchPolicy* LoadPolicyEntry(const char* path, const char* kind, const char* options_json,
                                     char* error_buf, size_t error_cap);
// See RoboloopTorchApi::policy_act.
int PolicyActEntry(RoboloopTorchPolicy* policy, const float* obs, int batch, int obs_dim,
                   float* actions, int action_dim, int batch_invariant, char* error_buf,
                   size_t error_cap);
// See RoboloopTorchApi::policy_act_chunk.
int PolicyActChunkEntry(RoboloopTorchPolicy* policy, const float* obs,
                        const int32_t* history_length, int batch, int history, int obs_dim,
                        float* actions, int chunk, int action_dim, int batch_invariant,
                        char* error_buf, size_t error_cap);
// See RoboloopTorchApi::policy_act_chunk_images.
int PolicyActChunkImagesEntry(RoboloopTorchPolicy* policy, const float* obs,
                              const int32_t* history_length, const uint8_t* images, int image_bytes,
                              int batch, int history, int obs_dim, float* actions, int chunk,
                              int action_dim, int batch_invariant, char* error_buf, size_t error_cap);
// See RoboloopTorchApi::free_policy.
void FreePolicyEntry(RoboloopTorchPolicy* policy);

}  // namespace roboloop::train
