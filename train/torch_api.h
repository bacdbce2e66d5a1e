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
#define ROBOLOOP_TORCH_ABI_VERSION 1u

// Name of the exported entry point.
#define ROBOLOOP_TORCH_ENTRY_POINT "roboloop_torch_api"

typedef struct RoboloopTorchApi {
  // ABI version the library was built with.
  uint32_t abi_version;
  // Writes a NUL-terminated JSON object describing LibTorch (version, threads, BLAS, CUDA)
  // into `buffer` of `capacity` bytes. Returns the length it needs (excluding the NUL);
  // when that is >= capacity the output is truncated and the caller should retry larger.
  size_t (*describe_runtime)(char* buffer, size_t capacity);
} RoboloopTorchApi;

// Signature of the entry point: returns the library's table (never NULL).
typedef const RoboloopTorchApi* (*RoboloopTorchEntryFn)(void);

#ifdef __cplusplus
}
#endif
