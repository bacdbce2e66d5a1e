// bench/render_bench: the env pool's camera rendering against a plain MuJoCo offscreen loop.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "bench/render_bench.h"

int main(int argc, char** argv) {
  roboloop::bench::RenderBenchOptions options;
  CLI::App app{"Rendering benchmark: env pool camera frames vs a plain MuJoCo offscreen loop (MUJOCO_GL picks the "
               "GL backend)"};
  app.add_option("--runs", options.runs, "Alternating runs per side")->capture_default_str();
  app.add_option("--threads", options.threads, "Threads (GL contexts) of both sides")->capture_default_str();
  app.add_option("--frames", options.frames, "Frames per thread and run")->capture_default_str();
  app.add_option("--width", options.width, "Frame width")->capture_default_str();
  app.add_option("--height", options.height, "Frame height")->capture_default_str();
  app.add_flag("--shadows", options.shadows, "Keep the light's shadow map (costly on OSMesa)");
  app.add_option("--models-dir", options.models_dir, "Folder holding push.xml")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  absl::Status status = roboloop::bench::RunRenderBench(options);
  if (!status.ok()) {
    std::fprintf(stderr, "render_bench: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
