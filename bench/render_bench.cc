#include "bench/render_bench.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <mujoco/mujoco.h>

#include "absl/strings/str_cat.h"
#include "bench/bench_stats.h"
#include "bench/rollout_anchor.h"
#include "common/fs.h"
#include "common/status.h"
#include "sim/gl_context.h"
#include "sim/rollout.h"
#include "sim/task_cameras.h"

namespace roboloop::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kCamera[] = "<camera name='agentview' pos='0 -0.45 0.35' xyaxes='1 0 0 0 0.6 0.8'/>";

// The push model with the camera 'agentview' added to its world body, its lights casting
// shadows only when `shadows` (a shadow map costs llvmpipe far more than an 84x84 frame).
absl::StatusOr<sim::ModelPtr> PushWithCamera(const std::string& models_dir, bool shadows) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::string xml, ReadFile(models_dir + "/push.xml"));
  const size_t end = xml.find("</worldbody>");
  if (end == std::string::npos) return absl::InvalidArgumentError(models_dir + "/push.xml has no </worldbody>");
  xml.insert(end, kCamera);
  ROBOLOOP_ASSIGN_OR_RETURN(sim::ModelPtr model, sim::LoadModelFromString("push-agentview", xml));
  for (int i = 0; i < model->nlight; ++i) model->light_castshadow[i] = shadows ? 1 : 0;
  return model;
}

// Steps the model's actuators with a fixed control; observes nothing and rewards nothing.
class CameraOnlyTask : public sim::Task {
 public:
  static absl::StatusOr<std::unique_ptr<sim::Task>> Create(const RenderBenchOptions& o) {
    sim::TaskDefinition def;
    def.name = "render-bench-push";
    ROBOLOOP_ASSIGN_OR_RETURN(def.model, PushWithCamera(o.models_dir, o.shadows));
    def.obs_spec.keys = {{"time", {1}}};
    def.obs_spec.cameras = {{"agentview", "agentview", o.width, o.height}};
    def.action_spec = sim::ActionSpecFromCtrlRange(def.model.get());
    def.control_substeps = 4;
    def.max_steps = o.frames;
    ROBOLOOP_RETURN_IF_ERROR(sim::PrepareTaskCameras(&def, "task render-bench-push"));
    return std::unique_ptr<sim::Task>(new CameraOnlyTask(std::move(def)));
  }
  void Reset(const mjModel*, mjData*, sim::Rng&) const override {}
  void Observe(const mjModel*, const mjData* d, float* obs) const override { obs[0] = static_cast<float>(d->time); }
  double Reward(const mjModel*, const mjData*) const override { return 0; }
  bool SuccessCondition(const mjModel*, const mjData*) const override { return false; }

 private:
  explicit CameraOnlyTask(sim::TaskDefinition def) : Task(std::move(def)) {}
};

// Pushes along a circle, so that the scene changes from frame to frame on both sides.
double Control(int step, int j) { return 0.8 * (j == 0 ? std::cos(0.05 * step) : std::sin(0.05 * step)); }

class CirclePolicy : public sim::Policy {
 public:
  explicit CirclePolicy(const sim::Task& task) : task_(task) {}
  std::string name() const override { return "circle"; }
  const sim::ObsSpec& obs_spec() const override { return task_.obs_spec(); }
  const sim::ActionSpec& action_spec() const override { return task_.action_spec(); }
  absl::Status Act(const sim::PolicyBatch& batch, float* actions) override {
    const int size = task_.action_spec().size();
    for (int row = 0; row < batch.batch; ++row) {
      for (int j = 0; j < size; ++j) actions[row * size + j] = static_cast<float>(Control(batch.step[row], j));
    }
    return absl::OkStatus();
  }

 private:
  const sim::Task& task_;
};

class NullSink : public sim::EpisodeSink {
 public:
  absl::Status OnEpisode(const sim::EpisodeRecord&, const sim::Trajectory*) override { return absl::OkStatus(); }
};

// One thread of the plain loop: its own context, scene and mjData; the loop is what a MuJoCo
// user writes (step, update the scene from the fixed camera, render, read the pixels).
struct PlainLoop {
  std::unique_ptr<sim::GlContext> context;
  mjvScene scene;
  mjvCamera camera;
  mjvOption option;
  mjrContext render;
  std::unique_ptr<mjData, void (*)(mjData*)> data{nullptr, mj_deleteData};
  std::vector<uint8_t> rgb;

  static absl::StatusOr<std::unique_ptr<PlainLoop>> Create(const sim::Task& task) {
    const mjModel* m = task.model();
    auto loop = std::make_unique<PlainLoop>();
    ROBOLOOP_ASSIGN_OR_RETURN(loop->context, sim::GlContext::Create(m->vis.global.offwidth, m->vis.global.offheight));
    mjv_defaultScene(&loop->scene);
    mjv_makeScene(m, &loop->scene, 2000);
    mjv_defaultCamera(&loop->camera);
    loop->camera.type = mjCAMERA_FIXED;
    loop->camera.fixedcamid = mj_name2id(m, mjOBJ_CAMERA, "agentview");
    mjv_defaultOption(&loop->option);
    mjr_defaultContext(&loop->render);
    mjr_makeContext(m, &loop->render, mjFONTSCALE_100);
    mjr_setBuffer(mjFB_OFFSCREEN, &loop->render);
    loop->data.reset(mj_makeData(m));
    loop->rgb.resize(task.obs_spec().image_bytes());
    return loop;
  }
  ~PlainLoop() {
    if (context != nullptr && context->MakeCurrent().ok()) {
      mjr_freeContext(&render);
      mjv_freeScene(&scene);
    }
  }

  // Renders `frames` frames; returns the context error, if any.
  absl::Status Run(const sim::Task& task, int frames) {
    ROBOLOOP_RETURN_IF_ERROR(context->MakeCurrent());
    const mjModel* m = task.model();
    const sim::CameraSpec& spec = task.obs_spec().cameras[0];
    const mjrRect viewport = {0, 0, spec.width, spec.height};
    mj_resetData(m, data.get());
    for (int step = 0; step < frames; ++step) {
      if (step > 0) {
        for (int j = 0; j < m->nu; ++j) data->ctrl[j] = Control(step - 1, j);
        for (int i = 0; i < task.control_substeps(); ++i) mj_step(m, data.get());
      }
      mjv_updateScene(m, data.get(), &option, nullptr, &camera, mjCAT_ALL, &scene);
      mjr_render(viewport, &scene, &render);
      mjr_readPixels(rgb.data(), nullptr, viewport, &render);
    }
    return absl::OkStatus();
  }
};

// Each loop renders o.frames frames on its own thread (the first on the caller's); returns
// frames/s per thread.
absl::StatusOr<double> RunPlain(const sim::Task& task, std::vector<std::unique_ptr<PlainLoop>>& loops, int frames) {
  std::vector<absl::Status> status(loops.size());
  const auto start = Clock::now();
  std::vector<std::thread> others;
  for (size_t t = 1; t < loops.size(); ++t) {
    others.emplace_back([&, t] { status[t] = loops[t]->Run(task, frames); });
  }
  status[0] = loops[0]->Run(task, frames);
  for (std::thread& other : others) other.join();
  const double seconds = SecondsSince(start);
  for (const absl::Status& s : status) ROBOLOOP_RETURN_IF_ERROR(s);
  return frames / seconds;
}

// Creates one plain loop per thread, each on the thread that will run it.
absl::StatusOr<std::vector<std::unique_ptr<PlainLoop>>> MakePlainLoops(const sim::Task& task, int threads) {
  std::vector<absl::StatusOr<std::unique_ptr<PlainLoop>>> made;
  for (int t = 0; t < threads; ++t) made.emplace_back(absl::UnknownError("not made"));
  std::vector<std::thread> others;
  for (int t = 1; t < threads; ++t) others.emplace_back([&, t] { made[t] = PlainLoop::Create(task); });
  made[0] = PlainLoop::Create(task);
  for (std::thread& other : others) other.join();
  std::vector<std::unique_ptr<PlainLoop>> loops;
  for (auto& loop : made) {
    if (!loop.ok()) return loop.status();
    loops.push_back(*std::move(loop));
  }
  return loops;
}

const char* EnvOrUnset(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "(unset)";
}

absl::Status ValidateOptions(const RenderBenchOptions& o) {
  for (auto [name, value] : {std::pair{"runs", o.runs}, std::pair{"threads", o.threads}, std::pair{"frames", o.frames}}) {
    if (value < 1) return absl::InvalidArgumentError(absl::StrCat(name, " must be >= 1, got ", value));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunRenderBench(const RenderBenchOptions& o) {
  ROBOLOOP_RETURN_IF_ERROR(ValidateOptions(o));
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<sim::Task> task, CameraOnlyTask::Create(o));
  ROBOLOOP_ASSIGN_OR_RETURN(sim::GlBackend backend, sim::SelectedGlBackend());
  sim::RolloutOptions rollout;
  rollout.num_envs = o.threads;
  rollout.num_episodes = o.threads;
  rollout.num_threads = o.threads;
  ROBOLOOP_ASSIGN_OR_RETURN(auto engine, sim::RolloutEngine::Create(task.get(), rollout));
  CirclePolicy policy(*task);
  NullSink sink;
  ROBOLOOP_ASSIGN_OR_RETURN(auto loops, MakePlainLoops(*task, o.threads));

  // A warm-up run of each side: our renderers are made on first use, and caches fill.
  ROBOLOOP_RETURN_IF_ERROR(engine->Run(policy, sink));
  ROBOLOOP_RETURN_IF_ERROR(RunPlain(*task, loops, o.frames).status());

  const std::string load_before = LoadAverage();
  std::vector<double> ours, plain, ratio;
  for (int run = 0; run < o.runs; ++run) {
    const auto start = Clock::now();
    // Each env renders after its reset and after every step but the last: o.frames frames.
    ROBOLOOP_RETURN_IF_ERROR(engine->Run(policy, sink));
    const double our_rate = o.frames / SecondsSince(start);
    ROBOLOOP_ASSIGN_OR_RETURN(double plain_rate, RunPlain(*task, loops, o.frames));
    std::printf("run %d: ours %.1f frames/s per thread, plain loop %.1f, ratio %.3f\n", run + 1, our_rate, plain_rate,
                our_rate / plain_rate);
    std::fflush(stdout);
    ours.push_back(our_rate);
    plain.push_back(plain_rate);
    ratio.push_back(our_rate / plain_rate);
  }

  const Summary r = Summarize(ratio);
  std::printf("\nRendering benchmark: env pool camera frames vs a plain MuJoCo offscreen loop (MuJoCo %s)\n",
              mj_versionString());
  std::printf("  model %s/push.xml + camera 'agentview', shadows %s, %dx%d RGB frames, %d thread(s) with one GL\n"
              "  context each, %d frames per thread and run, %d control substeps per frame, GL backend %s (MUJOCO_GL),\n"
              "  %d alternating runs\n",
              o.models_dir.c_str(), o.shadows ? "on" : "off", o.width, o.height, o.threads, o.frames,
              task->control_substeps(), sim::GlBackendName(backend), o.runs);
  PrintSide("ours (frames/s per thread)", ours);
  PrintSide("plain loop (frames/s per thread)", plain);
  std::printf("  ratio ours/plain loop              median %10.3f  min %10.3f  max %10.3f\n", r.median, r.min, r.max);
  std::printf("\nsettings:\n%sMUJOCO_GL=%s LP_NUM_THREADS=%s (llvmpipe's rasteriser threads)\n"
              "load average (1/5/15 min): %s before, %s after\n",
              MachineSettings().c_str(), EnvOrUnset("MUJOCO_GL"), EnvOrUnset("LP_NUM_THREADS"), load_before.c_str(),
              LoadAverage().c_str());
  return absl::OkStatus();
}

}  // namespace roboloop::bench
