// The C ABI between torch-free code and the on-demand LibTorch library (docs/architecture.md §1).
// libroboloop_torch.so exports one symbol, `roboloop_torch_api`, returning a table of
// function pointers. The table only grows: new entries are appended and the ABI version is
// bumped; a loader refuses a library whose version differs from its own.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Version of the table below. Bump on any change to it.
#define ROBOLOOP_TORCH_ABI_VERSION 7u

// Name of the exported entry point.
#define ROBOLOOP_TORCH_ENTRY_POINT "roboloop_torch_api"

// An inference policy loaded by the library; opaque to callers.
typedef struct RoboloopTorchPolicy RoboloopTorchPolicy;

// A data-parallel trainer replica (ABI 3); opaque to callers.
typedef struct RoboloopTorchTrainer RoboloopTorchTrainer;

// One training batch (layout of train/loader.h Batch); the arrays are not retained.
typedef struct RoboloopTrainBatch {
  int batch, history, chunk, obs_dim, action_dim;  // dimensions
  const float* obs;                // batch x history x obs_dim, normalised, left-padded
  const int32_t* history_length;   // batch: real observation steps
  const float* actions;            // batch x chunk x action_dim, normalised targets
  const uint8_t* action_valid;     // batch x chunk: 1 real, 0 padding
  // ABI 5: camera frames (docs/vision.md). image_bytes is the bytes of one observation's
  // frames (0 for state-only policies, then images is NULL).
  int image_bytes;
  const uint8_t* images;           // batch x image_bytes: the frames of each row's last
                                   // observation step, cameras in the policy's order, raw uint8
} RoboloopTrainBatch;

// Figures of one step, averaged over ranks.
typedef struct RoboloopTrainFigures {
  double loss;       // loss before the update
  double grad_norm;  // gradient norm before clipping
  double lr;         // learning rate used
} RoboloopTrainFigures;

typedef struct RoboloopTorchApi {
  // ABI version the library was built with.
  uint32_t abi_version;
  // Writes a NUL-terminated JSON object describing LibTorch (version, threads, BLAS, CUDA)
  // into `buffer` of `capacity` bytes. Returns the length it needs (excluding the NUL);
  // when that is >= capacity the output is truncated and the caller should retry larger.
  size_t (*describe_runtime)(char* buffer, size_t capacity);

  // --- ABI 2: inference policies. Errors are NUL-terminated messages written into
  // `error_buf` (at most `error_cap` bytes, truncated) that name the file. ---

  // Loads a policy from `path`. `kind` is a registered policy kind (registry/policy_kind.h,
  // docs/policy-kinds.md): a TorchScript file saved by torch.jit.save (its forward maps obs
  // [batch, obs_dim] to actions [batch, action_dim]) or the safetensors weights of a trainable
  // kind. `options_json` is a JSON object of the kind's options (absent ones take the kind's
  // defaults; "{}" or NULL for TorchScript); a trainable kind may add "normalization": {"obs":
  // {mean, std}, "action": {mean, std}} (then obs are normalised on the way in and actions
  // un-normalised on the way out).
  // Returns NULL on error. A TorchScript file using an op this LibTorch lacks is refused with
  // the op's name.
  RoboloopTorchPolicy* (*load_policy)(const char* path, const char* kind, const char* options_json,
                                      char* error_buf, size_t error_cap);
  // Writes batch x action_dim floats into `actions` for batch x obs_dim floats of `obs`. With
  // `batch_invariant` != 0 each row's result does not depend on the batch it is in (MLP:
  // batch-invariant kernels; TorchScript: one row at a time). Returns 0 on success, -1 on
  // error (wrong dims, an output of the wrong shape, a LibTorch error). One call at a
  // time per handle.
  int (*policy_act)(RoboloopTorchPolicy* policy, const float* obs, int batch, int obs_dim,
                    float* actions, int action_dim, int batch_invariant, char* error_buf,
                    size_t error_cap);
  // Releases a policy returned by load_policy; NULL is ignored.
  void (*free_policy)(RoboloopTorchPolicy* policy);

  // --- ABI 3: trainable policies (with history and chunk) and training. ---

  // Like policy_act for a policy reading `history` observation steps and writing `chunk`
  // actions: obs is batch x history x obs_dim (raw, left-padded by repetition),
  // history_length the real steps per row, actions batch x chunk x action_dim (raw). The
  // policy applies the normalization of its options. Returns 0 or -1 with a message.
  int (*policy_act_chunk)(RoboloopTorchPolicy* policy, const float* obs,
                          const int32_t* history_length, int batch, int history, int obs_dim,
                          float* actions, int chunk, int action_dim, int batch_invariant,
                          char* error_buf, size_t error_cap);
  // Builds a trainer from `config_json` (train/torch/trainer.h ParseTrainerConfig); for a
  // world size above 1 this joins the rendezvous and blocks until every rank has. NULL on
  // error.
  RoboloopTorchTrainer* (*trainer_create)(const char* config_json, char* error_buf,
                                          size_t error_cap);
  // One optimisation step at global step `step`. Returns 0, 1 when this rank's loss or the
  // gradient is NaN/Inf (no update applied; the message names the step), 2 (ABI 7) when the
  // failure may be another rank's: a collective failed (a peer vanished, the timeout passed) or
  // only another rank's loss is NaN/Inf (the message names the step), or -1 on any other error.
  int (*trainer_step)(RoboloopTorchTrainer* trainer, const RoboloopTrainBatch* batch,
                      int64_t step, RoboloopTrainFigures* figures, char* error_buf,
                      size_t error_cap);
  // Writes the policy weights (safetensors) and the trainer state, which embeds the
  // `driver_state` bytes. Returns 0 or -1.
  int (*trainer_save)(RoboloopTorchTrainer* trainer, const char* policy_path,
                      const char* state_path, const char* driver_state, size_t driver_size,
                      char* error_buf, size_t error_cap);
  // Restores a state written by trainer_save and copies its driver state into `driver_buf`
  // (at most driver_cap bytes). Returns the driver state's size (larger than driver_cap:
  // truncated) or -1 on error.
  int64_t (*trainer_load_state)(RoboloopTorchTrainer* trainer, const char* state_path,
                                char* driver_buf, size_t driver_cap, char* error_buf,
                                size_t error_cap);
  // Replaces the weights with a policy safetensors file (fine-tuning). Returns 0 or -1.
  int (*trainer_load_weights)(RoboloopTorchTrainer* trainer, const char* policy_path,
                              char* error_buf, size_t error_cap);
  // Releases a trainer (leaves the process group); NULL is ignored.
  void (*trainer_free)(RoboloopTorchTrainer* trainer);

  // --- ABI 4: validation. ---

  // Writes the mean loss of `batch` under the current weights into `loss`, without an update
  // or a collective (train/torch/trainer.h Trainer::ValidationLoss); `step` seeds its noise.
  // Returns 0 or -1 with a message.
  int (*trainer_validation_loss)(RoboloopTorchTrainer* trainer, const RoboloopTrainBatch* batch,
                                 int64_t step, double* loss, char* error_buf, size_t error_cap);

  // --- ABI 5: policies that see (docs/vision.md). ---

  // policy_act_chunk for a policy with cameras: `images` holds batch x image_bytes bytes, the
  // frames of each row's current observation, cameras in the order of the policy's options
  // (image_bytes must equal their total; a state-only policy takes 0 and NULL). Returns 0 or
  // -1 with a message.
  int (*policy_act_chunk_images)(RoboloopTorchPolicy* policy, const float* obs,
                                 const int32_t* history_length, const uint8_t* images,
                                 int image_bytes, int batch, int history, int obs_dim,
                                 float* actions, int chunk, int action_dim, int batch_invariant,
                                 char* error_buf, size_t error_cap);

  // --- ABI 6: the input pipeline (train/torch/device_batches.h). ---

  // Stages `batch`, the batch trainer_step will take at global step `step`: on a CUDA trainer
  // its arrays are copied into pinned host memory and their copy to the GPU starts on a side
  // stream, so that it overlaps the step called before it; trainer_step at `step` with the
  // same arrays (same pointers and dims) then uses that copy. The arrays are read before it
  // returns. Does nothing on the CPU. Returns 0 or -1 with a message.
  int (*trainer_stage)(RoboloopTorchTrainer* trainer, const RoboloopTrainBatch* batch, int64_t step,
                       char* error_buf, size_t error_cap);
} RoboloopTorchApi;

// Signature of the entry point: returns the library's table (never NULL).
typedef const RoboloopTorchApi* (*RoboloopTorchEntryFn)(void);

#ifdef __cplusplus
}
#endif
