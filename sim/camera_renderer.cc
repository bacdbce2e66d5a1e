#include "sim/camera_renderer.h"

#include <algorithm>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace roboloop::sim {
namespace {

// The headlight of the task models (MuJoCo's default: ambient 0.1, diffuse 0.4) leaves the
// scene dim; studio frames are lit as a studio would.
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

// Paints the pixels nothing was drawn on (depth at the far plane) with a light sky gradient.
// Rows are bottom-up.
void PaintBackground(int width, int height, const float* depth, uint8_t* rgb) {
  constexpr float kTop[3] = {196, 212, 230}, kBottom[3] = {236, 240, 244};
  for (int y = 0; y < height; ++y) {
    const float up = height > 1 ? static_cast<float>(y) / (height - 1) : 0;
    uint8_t colour[3];
    for (int c = 0; c < 3; ++c) colour[c] = static_cast<uint8_t>(kBottom[c] + (kTop[c] - kBottom[c]) * up);
    for (int x = 0; x < width; ++x) {
      const size_t pixel = static_cast<size_t>(y) * width + x;
      if (depth[pixel] >= 1.0f) std::copy_n(colour, 3, rgb + pixel * 3);
    }
  }
}

// Copies GL's bottom-up rows into top-down ones.
void FlipRows(int width, int height, const uint8_t* bottom_up, uint8_t* top_down) {
  const size_t row = static_cast<size_t>(width) * 3;
  for (int y = 0; y < height; ++y) std::copy_n(bottom_up + (height - 1 - y) * row, row, top_down + y * row);
}

absl::StatusOr<mjvCamera> MakeView(const mjModel* model, const CameraSpec& spec) {
  mjvCamera view;
  mjv_defaultCamera(&view);
  if (spec.camera.empty()) {
    view.type = mjCAMERA_FREE;
    for (int i = 0; i < 3; ++i) view.lookat[i] = model->stat.center[i];
    view.distance = model->stat.extent;
    view.elevation = -20;
    view.azimuth = 90;
    return view;
  }
  const int id = mj_name2id(model, mjOBJ_CAMERA, spec.camera.c_str());
  if (id < 0) {
    return absl::NotFoundError(absl::StrCat("camera '", spec.name, "': the model has no camera named '",
                                            spec.camera, "'; its cameras: ", ModelCameraNames(model)));
  }
  view.type = mjCAMERA_FIXED;
  view.fixedcamid = id;
  return view;
}

}  // namespace

struct CameraRenderer::Gl {
  std::unique_ptr<GlContext> context;
  mjvScene scene;
  mjvOption option;
  mjrContext render;
  bool scene_made = false, render_made = false;

  ~Gl() {
    if (context != nullptr && !context->MakeCurrent().ok()) return;
    if (render_made) mjr_freeContext(&render);
    if (scene_made) mjv_freeScene(&scene);
  }
};

std::string ModelCameraNames(const mjModel* model) {
  std::vector<std::string> names;
  for (int i = 0; i < model->ncam; ++i) names.push_back(mj_id2name(model, mjOBJ_CAMERA, i));
  return names.empty() ? "(none)" : absl::StrJoin(names, ", ");
}

absl::StatusOr<std::unique_ptr<CameraRenderer>> CameraRenderer::Create(const mjModel* model,
                                                                       std::vector<CameraSpec> cameras,
                                                                       Options options) {
  std::unique_ptr<CameraRenderer> renderer(new CameraRenderer(std::move(cameras), options));
  size_t largest = 0;
  for (const CameraSpec& camera : renderer->cameras_) {
    if (camera.width < 1 || camera.height < 1 || camera.width > model->vis.global.offwidth ||
        camera.height > model->vis.global.offheight) {
      return absl::InvalidArgumentError(absl::StrCat(
          "render: camera '", camera.name, "' ", camera.width, "x", camera.height,
          " does not fit the model's offscreen buffer ", model->vis.global.offwidth, "x",
          model->vis.global.offheight));
    }
    absl::StatusOr<mjvCamera> view = MakeView(model, camera);
    if (!view.ok()) return view.status();
    renderer->views_.push_back(*view);
    largest = std::max(largest, static_cast<size_t>(camera.width) * camera.height);
  }
  renderer->bottom_up_.resize(largest * 3);
  if (options.studio) renderer->depth_.resize(largest);
  renderer->gl_ = std::make_unique<Gl>();
  Gl& gl = *renderer->gl_;
  // Threads create their renderers at once; MuJoCo binds its GL functions in mjr_makeContext.
  static std::mutex creating;
  std::lock_guard<std::mutex> lock(creating);
  absl::StatusOr<std::unique_ptr<GlContext>> context =
      GlContext::Create(model->vis.global.offwidth, model->vis.global.offheight);
  if (!context.ok()) return context.status();
  gl.context = *std::move(context);
  mjv_defaultScene(&gl.scene);
  mjv_makeScene(model, &gl.scene, 2000);
  gl.scene_made = true;
  mjv_defaultOption(&gl.option);
  mjr_defaultContext(&gl.render);
  mjr_makeContext(model, &gl.render, mjFONTSCALE_100);
  gl.render_made = true;
  mjr_setBuffer(mjFB_OFFSCREEN, &gl.render);
  if (gl.render.currentBuffer != mjFB_OFFSCREEN) return absl::InternalError("render: no offscreen framebuffer");
  return renderer;
}

CameraRenderer::CameraRenderer(std::vector<CameraSpec> cameras, Options options)
    : cameras_(std::move(cameras)), options_(options) {}

CameraRenderer::~CameraRenderer() = default;

GlBackend CameraRenderer::backend() const { return gl_->context->backend(); }

absl::Status CameraRenderer::Render(const mjModel* m, mjData* data, uint8_t* images) {
  if (absl::Status current = gl_->context->MakeCurrent(); !current.ok()) return current;
  // After mj_step the positions lag the integrated state by one physics step; the frame shows
  // the state itself, as a restored state (mj_forward) does.
  mj_kinematics(m, data);
  mj_comPos(m, data);
  mj_camlight(m, data);
  mj_flex(m, data);
  mj_tendon(m, data);
  for (size_t i = 0; i < cameras_.size(); ++i) {
    mjv_updateScene(m, data, &gl_->option, nullptr, &views_[i], mjCAT_ALL, &gl_->scene);
    RenderOne(i, images);
    images += cameras_[i].bytes();
  }
  return absl::OkStatus();
}

void CameraRenderer::RenderOne(size_t camera, uint8_t* frame) {
  const CameraSpec& spec = cameras_[camera];
  if (options_.studio) BrightenHeadlight(&gl_->scene);
  const mjrRect viewport = {0, 0, spec.width, spec.height};
  mjr_render(viewport, &gl_->scene, &gl_->render);
  mjr_readPixels(bottom_up_.data(), options_.studio ? depth_.data() : nullptr, viewport, &gl_->render);
  if (options_.studio) PaintBackground(spec.width, spec.height, depth_.data(), bottom_up_.data());
  FlipRows(spec.width, spec.height, bottom_up_.data(), frame);
}

}  // namespace roboloop::sim
