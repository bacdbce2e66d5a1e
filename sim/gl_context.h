// Offscreen OpenGL contexts for MuJoCo rendering, with the GL library loaded at run time
// (docs/architecture.md §4): binaries start without GL, and only a run that renders loads it.
// Two backends: OSMesa (software, any machine) and EGL (headless, GPU machines), chosen by the
// MUJOCO_GL variable (docs/vision.md "Rendering").
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace roboloop::sim {

// A GL library that renders without a display.
enum class GlBackend {
  kOsMesa,  // libOSMesa: software rendering on the CPU
  kEgl,     // libEGL on a device display (a GPU), or Mesa's surfaceless platform
};

// "osmesa" or "egl".
const char* GlBackendName(GlBackend backend);

// The backend MUJOCO_GL names: unset or empty → OSMesa; "osmesa" or "egl" (any case) → that
// one; any other value → InvalidArgument naming the value and the accepted ones. Read once
// per process (the GL library it loads stays loaded; MuJoCo binds its GL functions to it).
absl::StatusOr<GlBackend> SelectedGlBackend();

// One offscreen GL context. MuJoCo renders into its own offscreen framebuffer, so the context
// needs no window surface. A GL context is current on one thread at a time: the thread that
// created it, or the last that called MakeCurrent.
class GlContext {
 public:
  // Loads the selected backend's library (once per process), creates a context and makes it
  // current on the calling thread. `width` x `height` is the largest frame to be drawn (OSMesa
  // needs a colour buffer of that size). Errors name the backend and the step that failed.
  static absl::StatusOr<std::unique_ptr<GlContext>> Create(int width, int height);
  virtual ~GlContext() = default;

  // Makes the context current on the calling thread (nothing to do when it already is).
  // Errors name the backend call that failed (EGL refuses a context current on another thread).
  absl::Status MakeCurrent();
  // The backend that made the context.
  virtual GlBackend backend() const = 0;
  // What draws: GL's renderer string (e.g. "llvmpipe (LLVM 15.0.6, 256 bits)" for OSMesa on
  // the CPU, "NVIDIA H200/PCIe/SSE2" for EGL on an NVIDIA GPU). Makes the context current on
  // the calling thread; errors are MakeCurrent's, or name the GL call that failed.
  absl::StatusOr<std::string> Renderer();

 protected:
  GlContext();
  // Makes the context current through the backend.
  virtual absl::Status Bind() = 0;
  // The GL function `name` as the backend's GetProcAddress gives it; null when it has none.
  virtual void* GlFunction(const char* name) const = 0;

 private:
  const uint64_t id_;  // unique in the process, never reused
};

}  // namespace roboloop::sim
