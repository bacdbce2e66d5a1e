// The C ABI between torch-free code and the on-demand LibTorch library (ARCHITECTURE §1).
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
#define ROBOLOOP_TORCH_ABI_VERSION 2u

// Name of the exported entry point.
#define ROBOLOOP_TORCH_ENTRY_POINT "roboloop_torch_api"

// An inference policy loaded by the library; opaque to callers.
typedef struct RoboloopTorchPolicy RoboloopTorchPolicy;

typedef struct RoboloopTorchApi {
  // ABI version the library was built with.
  uint32_t abi_version;
  // Writes a NUL-terminated JSON object describing LibTorch (version, threads, BLAS, CUDA)
  // into `buffer` of `capacity` bytes. Returns the length it needs (excluding the NUL);
  // when that is >= capacity the output is truncated and the caller should retry larger.
  size_t (*describe_runtime)(char* buffer, size_t capacity);

  // --- ABI 2: inference policies. Errors are NUL-terminated messages written into
  // `error_buf` (at most `error_cap` bytes, truncated) that name the file. ---

  // Loads a policy from `path`. `kind` is "torchscript" (a file saved by torch.jit.save; its
  // forward maps obs [batch, obs_dim] to actions [batch, action_dim]) or "mlp" (a safetensors
  // file with `layers.<i>.weight` [out, in] and `layers.<i>.bias` [out], i = 0..n).
  // `options_json` is a JSON object: for "mlp" {obs_dim, action_dim, hidden: [int], activation:
  // relu (default)|gelu|silu|tanh} (the activation follows every layer but the last); for
  // "torchscript" {} or NULL.
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
} RoboloopTorchApi;

// Signature of the entry point: returns the library's table (never NULL).
typedef const RoboloopTorchApi* (*RoboloopTorchEntryFn)(void);

#ifdef __cplusplus
}
#endif
