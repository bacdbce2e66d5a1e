#include "sim/render.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/png.h"
#include "common/status.h"
#include "sim/camera_renderer.h"
#include "sim/physics_state.h"

namespace roboloop::sim {
namespace {

// Renders `camera` with `renderer` for at most `max_frames` evenly spaced states of `states`.
absl::StatusOr<std::vector<std::string>> RenderPicked(const mjModel* model, const std::vector<double>& states,
                                                      int max_frames, const CameraSpec& camera,
                                                      CameraRenderer::Options options) {
  const size_t size = static_cast<size_t>(PhysicsStateSize(model));
  if (states.empty() || states.size() % size != 0) {
    return absl::InvalidArgumentError(absl::StrCat("render: ", states.size(), " state values are not whole states of ",
                                                   size, " values"));
  }
  const int steps = static_cast<int>(states.size() / size);
  const int frames = std::max(1, std::min(max_frames, steps));
  ROBOLOOP_ASSIGN_OR_RETURN(auto renderer, CameraRenderer::Create(model, {camera}, options));
  std::unique_ptr<mjData, void (*)(mjData*)> data(mj_makeData(model), mj_deleteData);
  std::vector<uint8_t> rgb(static_cast<size_t>(camera.bytes()));
  std::vector<std::string> pngs;
  for (int f = 0; f < frames; ++f) {
    const int step = frames == 1 ? 0 : static_cast<int>(static_cast<int64_t>(f) * (steps - 1) / (frames - 1));
    RestorePhysicsState(model, states.data() + static_cast<size_t>(step) * size, data.get());
    ROBOLOOP_RETURN_IF_ERROR(renderer->Render(model, data.get(), rgb.data()));
    ROBOLOOP_ASSIGN_OR_RETURN(std::string png, EncodePngRgb(camera.width, camera.height, rgb));
    pngs.push_back(std::move(png));
  }
  return pngs;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> RenderStatesAsPng(const mjModel* model, const std::vector<double>& states,
                                                           int max_frames, RenderOptions options) {
  const CameraSpec view{"view", "", options.width, options.height};
  CameraRenderer::Options studio;
  studio.studio = true;
  return RenderPicked(model, states, max_frames, view, studio);
}

absl::StatusOr<std::vector<std::string>> RenderCameraStatesAsPng(const Task& task, const std::string& camera,
                                                                 const std::vector<double>& states,
                                                                 int max_frames) {
  std::vector<std::string> names;
  for (const CameraSpec& spec : task.obs_spec().cameras) {
    if (spec.name == camera) return RenderPicked(task.model(), states, max_frames, spec, CameraRenderer::Options());
    names.push_back(spec.name);
  }
  return absl::NotFoundError(absl::StrCat("task ", task.name(), " has no camera observation '", camera,
                                          "'; its cameras: ", names.empty() ? "(none)" : absl::StrJoin(names, ", ")));
}

}  // namespace roboloop::sim
