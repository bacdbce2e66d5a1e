#include "sim/render.h"

#include <GL/osmesa.h>
#include <dlfcn.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/png.h"
#include "common/status.h"
#include "sim/physics_state.h"

namespace roboloop::sim {
namespace {

// The three OSMesa entry points, from libOSMesa loaded at run time (docs/architecture.md §4): binaries
// start without it, and only rendering needs it. RTLD_GLOBAL makes its gl* functions visible
// to MuJoCo's GL loader, as when it was linked.
struct OsMesaApi {
  decltype(&OSMesaCreateContextExt) create_context = nullptr;
  decltype(&OSMesaMakeCurrent) make_current = nullptr;
  decltype(&OSMesaDestroyContext) destroy_context = nullptr;
};

absl::StatusOr<OsMesaApi> LoadOsMesa() {
  constexpr char kLibrary[] = "libOSMesa.so.8";
  void* handle = dlopen(kLibrary, RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "render: cannot load ", kLibrary, " (Debian: libosmesa6): ", dlerror()));
  }
  OsMesaApi api;
  api.create_context =
      reinterpret_cast<decltype(api.create_context)>(dlsym(handle, "OSMesaCreateContextExt"));
  api.make_current = reinterpret_cast<decltype(api.make_current)>(dlsym(handle, "OSMesaMakeCurrent"));
  api.destroy_context =
      reinterpret_cast<decltype(api.destroy_context)>(dlsym(handle, "OSMesaDestroyContext"));
  if (api.create_context == nullptr || api.make_current == nullptr || api.destroy_context == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("render: ", kLibrary, " lacks an OSMesa entry point"));
  }
  return api;
}

// Loaded once per process.
const absl::StatusOr<OsMesaApi>& OsMesa() {
  static const absl::StatusOr<OsMesaApi> api = LoadOsMesa();
  return api;
}

// The headlight of the task models (MuJoCo's default: ambient 0.1, diffuse 0.4) leaves the
// scene dim; the frames are lit as a studio would.
constexpr float kHeadlightAmbient = 0.5f;
constexpr float kHeadlightDiffuse = 0.6f;

void BrightenHeadlight(mjvScene* scene) {
  for (int i = 0; i < scene->nlight; ++i) {
    mjvLight& light = scene->lights[i];
    if (!light.headlight) continue;
    std::fill_n(light.ambient, 3, kHeadlightAmbient);
    std::fill_n(light.diffuse, 3, kHeadlightDiffuse);
  }
}

// Paints the pixels nothing was drawn on (depth at the far plane) with a light sky gradient,
// so that dark geoms stand out instead of vanishing into black. Rows are bottom-up.
void PaintBackground(int width, int height, const std::vector<float>& depth, std::vector<uint8_t>* rgb) {
  constexpr float kTop[3] = {196, 212, 230}, kBottom[3] = {236, 240, 244};
  for (int y = 0; y < height; ++y) {
    const float up = height > 1 ? static_cast<float>(y) / (height - 1) : 0;
    uint8_t colour[3];
    for (int c = 0; c < 3; ++c) colour[c] = static_cast<uint8_t>(kBottom[c] + (kTop[c] - kBottom[c]) * up);
    for (int x = 0; x < width; ++x) {
      const size_t pixel = static_cast<size_t>(y) * width + x;
      if (depth[pixel] >= 1.0f) std::copy_n(colour, 3, rgb->data() + pixel * 3);
    }
  }
}

}  // namespace

struct OffscreenRenderer::Gl {
  OSMesaContext context = nullptr;
  std::vector<unsigned char> buffer;  // OSMesa's RGBA colour buffer
  mjvScene scene;
  mjvCamera camera;
  mjvOption option;
  mjrContext render;
  bool scene_made = false, render_made = false;

  ~Gl() {
    if (render_made) mjr_freeContext(&render);
    if (scene_made) mjv_freeScene(&scene);
    if (context != nullptr) OsMesa()->destroy_context(context);
  }
};

absl::StatusOr<std::unique_ptr<OffscreenRenderer>> OffscreenRenderer::Create(const mjModel* model,
                                                                             RenderOptions options) {
  if (options.width < 1 || options.height < 1 || options.width > model->vis.global.offwidth ||
      options.height > model->vis.global.offheight) {
    return absl::InvalidArgumentError(absl::StrCat("render: ", options.width, "x", options.height,
                                                   " does not fit the model's offscreen buffer ",
                                                   model->vis.global.offwidth, "x", model->vis.global.offheight));
  }
  std::unique_ptr<OffscreenRenderer> renderer(new OffscreenRenderer(model, options));
  renderer->gl_ = std::make_unique<Gl>();
  Gl& gl = *renderer->gl_;
  if (!OsMesa().ok()) return OsMesa().status();
  gl.context = OsMesa()->create_context(OSMESA_RGBA, 24, 8, 8, nullptr);
  if (gl.context == nullptr) return absl::InternalError("render: OSMesaCreateContextExt failed");
  const int width = model->vis.global.offwidth, height = model->vis.global.offheight;
  gl.buffer.assign(static_cast<size_t>(width) * height * 4, 0);
  if (!OsMesa()->make_current(gl.context, gl.buffer.data(), GL_UNSIGNED_BYTE, width, height)) {
    return absl::InternalError("render: OSMesaMakeCurrent failed");
  }
  mjv_defaultScene(&gl.scene);
  mjv_makeScene(model, &gl.scene, 2000);
  gl.scene_made = true;
  mjv_defaultCamera(&gl.camera);
  gl.camera.type = mjCAMERA_FREE;
  for (int i = 0; i < 3; ++i) gl.camera.lookat[i] = model->stat.center[i];
  gl.camera.distance = 1.0 * model->stat.extent;
  gl.camera.elevation = -20;
  gl.camera.azimuth = 90;
  mjv_defaultOption(&gl.option);
  mjr_defaultContext(&gl.render);
  mjr_makeContext(model, &gl.render, mjFONTSCALE_100);
  gl.render_made = true;
  mjr_setBuffer(mjFB_OFFSCREEN, &gl.render);
  if (gl.render.currentBuffer != mjFB_OFFSCREEN) return absl::InternalError("render: no offscreen framebuffer");
  return renderer;
}

OffscreenRenderer::OffscreenRenderer(const mjModel* model, RenderOptions options) : model_(model), options_(options) {}

OffscreenRenderer::~OffscreenRenderer() = default;

absl::StatusOr<std::vector<uint8_t>> OffscreenRenderer::Render(mjData* data) {
  Gl& gl = *gl_;
  if (!OsMesa()->make_current(gl.context, gl.buffer.data(), GL_UNSIGNED_BYTE, model_->vis.global.offwidth,
                         model_->vis.global.offheight)) {
    return absl::InternalError("render: OSMesaMakeCurrent failed");
  }
  mjv_updateScene(model_, data, &gl.option, nullptr, &gl.camera, mjCAT_ALL, &gl.scene);
  BrightenHeadlight(&gl.scene);
  const mjrRect viewport = {0, 0, options_.width, options_.height};
  mjr_render(viewport, &gl.scene, &gl.render);
  const size_t pixels = static_cast<size_t>(options_.width) * options_.height;
  std::vector<uint8_t> bottom_up(pixels * 3);
  std::vector<float> depth(pixels);
  mjr_readPixels(bottom_up.data(), depth.data(), viewport, &gl.render);
  PaintBackground(options_.width, options_.height, depth, &bottom_up);
  std::vector<uint8_t> rgb(bottom_up.size());
  const size_t row = static_cast<size_t>(options_.width) * 3;
  for (int y = 0; y < options_.height; ++y) {
    std::copy_n(bottom_up.data() + (options_.height - 1 - y) * row, row, rgb.data() + y * row);
  }
  return rgb;
}

absl::StatusOr<std::vector<std::string>> RenderStatesAsPng(const mjModel* model, const std::vector<double>& states,
                                                           int max_frames, RenderOptions options) {
  const size_t size = static_cast<size_t>(PhysicsStateSize(model));
  if (states.empty() || states.size() % size != 0) {
    return absl::InvalidArgumentError(absl::StrCat("render: ", states.size(), " state values are not whole states of ",
                                                   size, " values"));
  }
  const int steps = static_cast<int>(states.size() / size);
  const int frames = std::max(1, std::min(max_frames, steps));
  ROBOLOOP_ASSIGN_OR_RETURN(auto renderer, OffscreenRenderer::Create(model, options));
  std::unique_ptr<mjData, void (*)(mjData*)> data(mj_makeData(model), mj_deleteData);
  std::vector<std::string> pngs;
  for (int f = 0; f < frames; ++f) {
    const int step = frames == 1 ? 0 : static_cast<int>(static_cast<int64_t>(f) * (steps - 1) / (frames - 1));
    RestorePhysicsState(model, states.data() + static_cast<size_t>(step) * size, data.get());
    mj_forward(model, data.get());
    ROBOLOOP_ASSIGN_OR_RETURN(std::vector<uint8_t> rgb, renderer->Render(data.get()));
    ROBOLOOP_ASSIGN_OR_RETURN(std::string png, EncodePngRgb(options.width, options.height, rgb));
    pngs.push_back(std::move(png));
  }
  return pngs;
}

}  // namespace roboloop::sim
