// The rendering benchmark (issue 23, req 8): the env pool's rendered camera frames per second
// and thread against a plain MuJoCo offscreen loop (one GL context per thread, mj_step then
// mjv_updateScene + mjr_render + mjr_readPixels) on the same model, camera and frame size,
// alternating runs, median of the ratio with min–max.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "sim/builtin_tasks.h"

namespace roboloop::bench {

// Options of the rendering benchmark.
struct RenderBenchOptions {
  int runs = 5;         // alternating runs of each side
  int threads = 1;      // threads of our pool and of the plain loop (one GL context each)
  int frames = 400;     // frames per thread and run (one env per thread, one camera)
  int width = 84;       // frame size
  int height = 84;
  bool shadows = false; // the push model's light casts shadows (off: frames cost what the camera sees)
  std::string models_dir = sim::BuiltinTaskOptions::DefaultModelsDir();  // holds push.xml
};

// Runs the benchmark on the push model seen by an added MJCF camera 'agentview' and prints
// frames/s per thread of both sides, the ratio, the GL backend and the machine settings to
// stdout. InvalidArgument for bad options; GL errors as sim::CameraRenderer::Create.
absl::Status RunRenderBench(const RenderBenchOptions& options);

}  // namespace roboloop::bench
