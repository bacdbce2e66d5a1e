// Rendering a model's cameras into RGB frames (docs/vision.md "Rendering"): one GL context and
// MuJoCo scene per renderer, the frames of several cameras back to back as in an observation's
// image row.
#pragma once

#include <mujoco/mujoco.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/gl_context.h"
#include "sim/spec.h"

namespace roboloop::sim {

// Renders `cameras` of one model. Not thread-safe: one thread at a time renders; each call
// makes the renderer's context current on the calling thread.
class CameraRenderer {
 public:
  // How frames are lit and backed.
  struct Options {
    // false: MuJoCo's plain frames (camera observations). true: a brightened headlight and a
    // light sky wherever nothing was drawn, so that dark geoms stand out (reports' views).
    bool studio = false;
  };

  // Creates a GL context (MUJOCO_GL's backend, current on the calling thread) and MuJoCo's scene
  // and render context for `model` (not owned; must outlive the renderer). Each camera's
  // `camera` names an MJCF camera of the model ("" = a free camera framing the model from its
  // centre, one extent away). NotFound for an unknown camera; InvalidArgument for a size
  // beyond the model's offscreen buffer (vis.global.offwidth x offheight); GL errors name
  // the backend step that failed.
  static absl::StatusOr<std::unique_ptr<CameraRenderer>> Create(const mjModel* model,
                                                                std::vector<CameraSpec> cameras,
                                                                Options options);
  ~CameraRenderer();

  // Renders every camera for the state in `data` of the model `m` (the renderer's model or a
  // copy with the same geometry) into `images`: ObsSpec::image_bytes() bytes, each camera's
  // uint8 height x width x 3 RGB frame in order, rows top to bottom. First recomputes the
  // positions of `data` from its state (mj_kinematics, mj_comPos, mj_camlight, mj_flex,
  // mj_tendon; after mj_step they lag by one physics step), so a state gives the same frame
  // whether stepped into or restored; the state itself is untouched. Errors come from making
  // the context current.
  absl::Status Render(const mjModel* m, mjData* data, uint8_t* images);

  // The GL backend rendering the frames.
  GlBackend backend() const;
  // The cameras given to Create, in the order Render writes them.
  const std::vector<CameraSpec>& cameras() const { return cameras_; }

 private:
  struct Gl;
  CameraRenderer(std::vector<CameraSpec> cameras, Options options);
  void RenderOne(size_t camera, uint8_t* frame);

  std::vector<CameraSpec> cameras_;
  Options options_;
  std::vector<mjvCamera> views_;       // per camera: MuJoCo's camera placement
  std::vector<uint8_t> bottom_up_;     // the largest frame as GL reads it
  std::vector<float> depth_;           // its depth (studio frames)
  std::unique_ptr<Gl> gl_;
};

// The names of `model`'s MJCF cameras, comma-separated ("(none)" without cameras), for errors.
std::string ModelCameraNames(const mjModel* model);

}  // namespace roboloop::sim
