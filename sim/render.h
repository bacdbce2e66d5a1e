// Offscreen rendering of MuJoCo states with OSMesa, loaded at run time (docs/architecture.md §4, §7): no
// display, no GPU; identical pixels for identical states. Used by reports to animate episodes.
#pragma once

#include <mujoco/mujoco.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace roboloop::sim {

// Size of the rendered frames (the default is MuJoCo's default offscreen buffer).
struct RenderOptions {
  int width = 640;   // at most the model's vis.global.offwidth
  int height = 480;  // at most the model's vis.global.offheight
};

// One OSMesa context and MuJoCo scene for one model. Not thread-safe: one thread renders
// (the context is made current on the calling thread for each frame).
class OffscreenRenderer {
 public:
  // Creates the context for `model` (not owned; must outlive the renderer). Errors name the
  // step that failed (OSMesa context, frame size beyond the model's offscreen buffer).
  static absl::StatusOr<std::unique_ptr<OffscreenRenderer>> Create(const mjModel* model, RenderOptions options);
  ~OffscreenRenderer();

  // The scene of `data` seen from a free camera framing the model (looking at its centre from
  // one extent away), lit by a brightened headlight, on a light background where nothing was
  // drawn, as RGB rows top to bottom.
  absl::StatusOr<std::vector<uint8_t>> Render(mjData* data);

  const RenderOptions& options() const { return options_; }

 private:
  OffscreenRenderer(const mjModel* model, RenderOptions options);

  const mjModel* model_;
  RenderOptions options_;
  struct Gl;
  std::unique_ptr<Gl> gl_;
};

// PNG frames of an episode from its recorded physics states (sim/physics_state.h layout,
// `state_size` doubles per step, as in Trajectory::states): at most `max_frames`, evenly
// spaced, the first and the last state included. InvalidArgument for a ragged state array.
absl::StatusOr<std::vector<std::string>> RenderStatesAsPng(const mjModel* model, const std::vector<double>& states,
                                                           int max_frames, RenderOptions options);

}  // namespace roboloop::sim
