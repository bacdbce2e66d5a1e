#include "sim/gl_context.h"

#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GL/osmesa.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace roboloop::sim {
namespace {

// Opens `library` with its symbols global: MuJoCo's GL loader finds the backend's
// GetProcAddress among the loaded libraries, as when it was linked.
absl::StatusOr<void*> OpenGlobal(const char* library, const char* package) {
  void* handle = dlopen(library, RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("render: cannot load ", library, " (Debian: ", package, "): ", dlerror()));
  }
  return handle;
}

template <typename Fn>
bool BindSymbol(void* handle, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name));
  return *fn != nullptr;
}

// The OSMesa entry points.
struct OsMesaApi {
  decltype(&OSMesaCreateContextExt) create_context = nullptr;
  decltype(&OSMesaMakeCurrent) make_current = nullptr;
  decltype(&OSMesaDestroyContext) destroy_context = nullptr;
  decltype(&OSMesaGetProcAddress) get_proc_address = nullptr;
};

absl::StatusOr<OsMesaApi> LoadOsMesa() {
  constexpr char kLibrary[] = "libOSMesa.so.8";
  absl::StatusOr<void*> handle = OpenGlobal(kLibrary, "libosmesa6");
  if (!handle.ok()) return handle.status();
  OsMesaApi api;
  if (!BindSymbol(*handle, "OSMesaCreateContextExt", &api.create_context) ||
      !BindSymbol(*handle, "OSMesaMakeCurrent", &api.make_current) ||
      !BindSymbol(*handle, "OSMesaDestroyContext", &api.destroy_context) ||
      !BindSymbol(*handle, "OSMesaGetProcAddress", &api.get_proc_address)) {
    return absl::FailedPreconditionError(absl::StrCat("render: ", kLibrary, " lacks an OSMesa entry point"));
  }
  return api;
}

const absl::StatusOr<OsMesaApi>& OsMesa() {
  static const absl::StatusOr<OsMesaApi> api = LoadOsMesa();
  return api;
}

class OsMesaContext : public GlContext {
 public:
  static absl::StatusOr<std::unique_ptr<GlContext>> Create(int width, int height) {
    if (!OsMesa().ok()) return OsMesa().status();
    std::unique_ptr<OsMesaContext> gl(new OsMesaContext(width, height));
    gl->context_ = OsMesa()->create_context(OSMESA_RGBA, 24, 8, 8, nullptr);
    if (gl->context_ == nullptr) return absl::InternalError("render: OSMesaCreateContextExt failed");
    if (absl::Status current = gl->MakeCurrent(); !current.ok()) return current;
    return std::unique_ptr<GlContext>(std::move(gl));
  }
  ~OsMesaContext() override {
    if (context_ != nullptr) OsMesa()->destroy_context(context_);
  }

  absl::Status Bind() override {
    if (!OsMesa()->make_current(context_, buffer_.data(), GL_UNSIGNED_BYTE, width_, height_)) {
      return absl::InternalError("render: OSMesaMakeCurrent failed");
    }
    return absl::OkStatus();
  }
  GlBackend backend() const override { return GlBackend::kOsMesa; }
  void* GlFunction(const char* name) const override {
    return reinterpret_cast<void*>(OsMesa()->get_proc_address(name));
  }

 private:
  OsMesaContext(int width, int height)
      : width_(width), height_(height), buffer_(static_cast<size_t>(width) * height * 4) {}

  int width_, height_;
  std::vector<unsigned char> buffer_;  // OSMesa's RGBA colour buffer
  OSMesaContext context_ = nullptr;
};

// The EGL entry points and the process's display: the first device (a GPU) when the
// device platform is there, else Mesa's surfaceless platform.
struct EglApi {
  decltype(&eglGetProcAddress) get_proc_address = nullptr;
  decltype(&eglInitialize) initialize = nullptr;
  decltype(&eglChooseConfig) choose_config = nullptr;
  decltype(&eglBindAPI) bind_api = nullptr;
  decltype(&eglCreateContext) create_context = nullptr;
  decltype(&eglMakeCurrent) make_current = nullptr;
  decltype(&eglDestroyContext) destroy_context = nullptr;
  decltype(&eglGetError) get_error = nullptr;
  EGLDisplay display = EGL_NO_DISPLAY;
  EGLConfig config = nullptr;
};

absl::Status EglError(const EglApi& api, const char* step) {
  return absl::InternalError(absl::StrCat("render: EGL ", step, " failed (error 0x", absl::Hex(api.get_error()), ")"));
}

EGLDisplay OpenEglDisplay(const EglApi& api) {
  auto get_display = reinterpret_cast<PFNEGLGETPLATFORMDISPLAYEXTPROC>(
      api.get_proc_address("eglGetPlatformDisplayEXT"));
  if (get_display == nullptr) return EGL_NO_DISPLAY;
  auto query_devices = reinterpret_cast<PFNEGLQUERYDEVICESEXTPROC>(api.get_proc_address("eglQueryDevicesEXT"));
  EGLDeviceEXT device = nullptr;
  EGLint devices = 0;
  if (query_devices != nullptr && query_devices(1, &device, &devices) && devices > 0) {
    EGLDisplay display = get_display(EGL_PLATFORM_DEVICE_EXT, device, nullptr);
    if (display != EGL_NO_DISPLAY) return display;
  }
  return get_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, nullptr);
}

absl::StatusOr<EglApi> LoadEgl() {
  constexpr char kLibrary[] = "libEGL.so.1";
  absl::StatusOr<void*> handle = OpenGlobal(kLibrary, "libegl1 and a GPU driver's EGL");
  if (!handle.ok()) return handle.status();
  EglApi api;
  if (!BindSymbol(*handle, "eglGetProcAddress", &api.get_proc_address) || !BindSymbol(*handle, "eglInitialize", &api.initialize) ||
      !BindSymbol(*handle, "eglChooseConfig", &api.choose_config) || !BindSymbol(*handle, "eglBindAPI", &api.bind_api) ||
      !BindSymbol(*handle, "eglCreateContext", &api.create_context) || !BindSymbol(*handle, "eglMakeCurrent", &api.make_current) ||
      !BindSymbol(*handle, "eglDestroyContext", &api.destroy_context) || !BindSymbol(*handle, "eglGetError", &api.get_error)) {
    return absl::FailedPreconditionError(absl::StrCat("render: ", kLibrary, " lacks an EGL entry point"));
  }
  api.display = OpenEglDisplay(api);
  if (api.display == EGL_NO_DISPLAY) {
    return absl::FailedPreconditionError("render: EGL has neither a device nor a surfaceless display");
  }
  EGLint major = 0, minor = 0;
  if (!api.initialize(api.display, &major, &minor)) return EglError(api, "eglInitialize");
  const EGLint attributes[] = {EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT,
                               EGL_RED_SIZE, 8, EGL_GREEN_SIZE, 8, EGL_BLUE_SIZE, 8, EGL_ALPHA_SIZE, 8,
                               EGL_DEPTH_SIZE, 24, EGL_STENCIL_SIZE, 8, EGL_NONE};
  EGLint configs = 0;
  if (!api.choose_config(api.display, attributes, &api.config, 1, &configs) || configs < 1) {
    return EglError(api, "eglChooseConfig (RGBA8, depth 24, OpenGL)");
  }
  if (!api.bind_api(EGL_OPENGL_API)) return EglError(api, "eglBindAPI(OpenGL)");
  return api;
}

const absl::StatusOr<EglApi>& Egl() {
  static const absl::StatusOr<EglApi> api = LoadEgl();
  return api;
}

class EglContext : public GlContext {
 public:
  static absl::StatusOr<std::unique_ptr<GlContext>> Create() {
    if (!Egl().ok()) return Egl().status();
    std::unique_ptr<EglContext> gl(new EglContext());
    // eglBindAPI is per thread: a worker thread creating its context binds OpenGL again.
    if (!Egl()->bind_api(EGL_OPENGL_API)) return EglError(*Egl(), "eglBindAPI(OpenGL)");
    gl->context_ = Egl()->create_context(Egl()->display, Egl()->config, EGL_NO_CONTEXT, nullptr);
    if (gl->context_ == EGL_NO_CONTEXT) return EglError(*Egl(), "eglCreateContext");
    if (absl::Status current = gl->MakeCurrent(); !current.ok()) return current;
    return std::unique_ptr<GlContext>(std::move(gl));
  }
  ~EglContext() override {
    if (context_ != EGL_NO_CONTEXT) {
      Egl()->make_current(Egl()->display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
      Egl()->destroy_context(Egl()->display, context_);
    }
  }

  absl::Status Bind() override {
    if (!Egl()->make_current(Egl()->display, EGL_NO_SURFACE, EGL_NO_SURFACE, context_)) {
      return EglError(*Egl(), "eglMakeCurrent (surfaceless)");
    }
    return absl::OkStatus();
  }
  GlBackend backend() const override { return GlBackend::kEgl; }
  void* GlFunction(const char* name) const override {
    return reinterpret_cast<void*>(Egl()->get_proc_address(name));
  }

 private:
  EglContext() = default;
  EGLContext context_ = EGL_NO_CONTEXT;
};

absl::StatusOr<GlBackend> BackendFromEnvironment() {
  const char* value = std::getenv("MUJOCO_GL");
  const std::string name = absl::AsciiStrToLower(value == nullptr ? "" : value);
  if (name.empty() || name == "osmesa") return GlBackend::kOsMesa;
  if (name == "egl") return GlBackend::kEgl;
  return absl::InvalidArgumentError(
      absl::StrCat("MUJOCO_GL='", value, "' is not a rendering backend roboloop has; use osmesa (the default, "
                   "software) or egl (headless GPU)"));
}

// The id of the context current on this thread (0: none that roboloop made current).
thread_local uint64_t current_context_id = 0;
std::atomic<uint64_t> next_context_id{1};

}  // namespace

GlContext::GlContext() : id_(next_context_id.fetch_add(1)) {}

absl::Status GlContext::MakeCurrent() {
  if (current_context_id == id_) return absl::OkStatus();
  absl::Status bound = Bind();
  current_context_id = bound.ok() ? id_ : 0;
  return bound;
}

absl::StatusOr<std::string> GlContext::Renderer() {
  if (absl::Status current = MakeCurrent(); !current.ok()) return current;
  auto get_string = reinterpret_cast<const GLubyte* (*)(GLenum)>(GlFunction("glGetString"));
  if (get_string == nullptr) return absl::InternalError("render: the GL library has no glGetString");
  const GLubyte* renderer = get_string(GL_RENDERER);
  if (renderer == nullptr) return absl::InternalError("render: glGetString(GL_RENDERER) failed");
  return std::string(reinterpret_cast<const char*>(renderer));
}

const char* GlBackendName(GlBackend backend) { return backend == GlBackend::kEgl ? "egl" : "osmesa"; }

absl::StatusOr<GlBackend> SelectedGlBackend() {
  static const absl::StatusOr<GlBackend> backend = BackendFromEnvironment();
  return backend;
}

absl::StatusOr<std::unique_ptr<GlContext>> GlContext::Create(int width, int height) {
  absl::StatusOr<GlBackend> backend = SelectedGlBackend();
  if (!backend.ok()) return backend.status();
  return *backend == GlBackend::kEgl ? EglContext::Create() : OsMesaContext::Create(width, height);
}

}  // namespace roboloop::sim
