#include "sim/task_plugin.h"

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status.h"
#include "sim/plugin_call_guard.h"
#include "sim/task_cameras.h"
#include "sim/task_plugin_abi.h"

namespace roboloop::sim {
namespace {

double UniformFromRng(void* state, double low, double high) {
  return static_cast<Rng*>(state)->Uniform(low, high);
}

// Floats past the declared observation that the observe callback must leave alone, and their
// bit pattern (a signalling NaN no computation yields).
constexpr int kObservationGuardFloats = 16;
constexpr uint32_t kObservationGuardBits = 0x7fa5c0deu;

// The call sites of one plug-in task's callbacks, named in the messages about their calls.
struct PluginTaskSites {
  const PluginCallSite* reset;
  const PluginCallSite* observe;
  const PluginCallSite* reward;
  const PluginCallSite* success_condition;
  const PluginCallSite* terminated;
};

// `plugin` names the task and its library ("task plug-in T (library L)").
PluginTaskSites NewPluginTaskSites(const std::string& plugin) {
  return {NewPluginCallSite(plugin, "reset callback"), NewPluginCallSite(plugin, "observe callback"),
          NewPluginCallSite(plugin, "reward callback"), NewPluginCallSite(plugin, "success_condition callback"),
          NewPluginCallSite(plugin, "terminated callback")};
}

// This thread's observation buffer for the observe callback: `size` floats, then the guard.
// (initial-exec: roboloop links this module statically, and a call reaches the buffer directly.)
float* GuardedObservationBuffer(int size) {
  thread_local std::vector<float> buffer __attribute__((tls_model("initial-exec")));
  const size_t needed = static_cast<size_t>(size) + kObservationGuardFloats;
  if (buffer.size() < needed) buffer.resize(needed);
  for (int i = 0; i < kObservationGuardFloats; ++i) std::memcpy(&buffer[size + i], &kObservationGuardBits, 4);
  return buffer.data();
}

// How many guard floats after `size` floats of `buffer` the callback overwrote (the last one
// changed counts, with those before it); 0 when the guard is intact.
int OverwrittenGuardFloats(const float* buffer, int size) {
  for (int i = kObservationGuardFloats; i > 0; --i) {
    uint32_t bits = 0;
    std::memcpy(&bits, &buffer[size + i - 1], 4);
    if (bits != kObservationGuardBits) return i;
  }
  return 0;
}

// A task whose behaviour is a plugin's C callbacks. Each call is marked for the crash handler
// and the watchdog (sim/plugin_call_guard.h); the observation goes through a guarded buffer.
class PluginTask : public Task {
 public:
  PluginTask(TaskDefinition def, const RoboloopTaskV1* plugin, PluginTaskSites sites)
      : Task(std::move(def)), plugin_(plugin), sites_(sites) {}

  void Reset(const mjModel* m, mjData* d, Rng& rng) const override {
    RoboloopRng c_rng{&rng, &UniformFromRng};
    ScopedPluginCall call(sites_.reset);
    plugin_->reset(m, d, &c_rng);
  }
  // ObserveOrError; a plug-in that wrote past its buffer aborts (a caller that cannot stop).
  void Observe(const mjModel* m, const mjData* d, float* obs) const override {
    const absl::Status observed = ObserveOrError(m, d, obs);
    ROBOLOOP_CHECK_MSG(observed.ok(), observed.message());
  }
  // The plug-in writes into this thread's guarded buffer; a changed guard is an error naming
  // the plug-in and the declared size, else the observation is copied to `obs`.
  absl::Status ObserveOrError(const mjModel* m, const mjData* d, float* obs) const override {
    const int size = obs_spec().size();
    float* buffer = GuardedObservationBuffer(size);
    {
      ScopedPluginCall call(sites_.observe);
      plugin_->observe(m, d, buffer);
    }
    if (const int overwritten = OverwrittenGuardFloats(buffer, size); overwritten > 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          sites_.observe->plugin(), ": its observe callback wrote past the end of the observation buffer: at least ",
          size + overwritten, " floats where its obs keys declare ", size));
    }
    std::memcpy(obs, buffer, sizeof(float) * static_cast<size_t>(size));
    return absl::OkStatus();
  }
  double Reward(const mjModel* m, const mjData* d) const override {
    ScopedPluginCall call(sites_.reward);
    return plugin_->reward(m, d);
  }
  bool SuccessCondition(const mjModel* m, const mjData* d) const override {
    ScopedPluginCall call(sites_.success_condition);
    return plugin_->success_condition(m, d) != 0;
  }
  bool Terminated(const mjModel* m, const mjData* d) const override {
    if (plugin_->terminated == nullptr) return false;
    ScopedPluginCall call(sites_.terminated);
    return plugin_->terminated(m, d) != 0;
  }

 private:
  const RoboloopTaskV1* plugin_;
  PluginTaskSites sites_;
};

// Why an older plug-in no longer loads.
const char* AbiVersionHint(uint32_t version) {
  if (version == 1) return " (version 1 is MuJoCo 2.2.2's structs: rebuild the plugin against MuJoCo 3's headers)";
  if (version == 2) {
    return " (version 2 predates camera observations: rebuild the plugin against sim/task_plugin_abi.h, "
           "whose RoboloopTaskV1 ends with num_cameras and cameras)";
  }
  return "";
}

// CheckDatasetName for `name` (null counts as empty); errors name the task's `field`.
absl::Status CheckPluginName(const char* name, const std::string& what, const RoboloopTaskV1& t,
                             const std::string& field) {
  return Annotate(CheckDatasetName(name != nullptr ? name : "", what), absl::StrCat("task ", t.name, ": ", field));
}

// The task's name, obs key names and camera names must be able to name dataset keys.
absl::Status CheckPluginTaskNames(const RoboloopTaskV1& t) {
  ROBOLOOP_RETURN_IF_ERROR(CheckPluginName(t.name, "task name", t, "name"));
  for (int i = 0; i < t.num_obs_keys; ++i) {
    ROBOLOOP_RETURN_IF_ERROR(
        CheckPluginName(t.obs_keys[i].name, "observation", t, absl::StrCat("obs_keys[", i, "].name")));
  }
  for (int i = 0; i < t.num_cameras; ++i) {
    ROBOLOOP_RETURN_IF_ERROR(CheckPluginName(t.cameras[i].name, "camera", t, absl::StrCat("cameras[", i, "].name")));
  }
  return absl::OkStatus();
}

absl::Status ValidatePluginTask(const RoboloopTaskV1& t) {
  if (t.abi_version != ROBOLOOP_TASK_PLUGIN_ABI_VERSION) {
    return absl::FailedPreconditionError(
        absl::StrCat("task built for plugin ABI version ", t.abi_version,
                     ", this roboloop supports version ", ROBOLOOP_TASK_PLUGIN_ABI_VERSION,
                     AbiVersionHint(t.abi_version)));
  }
  if (t.name == nullptr || *t.name == '\0') return absl::InvalidArgumentError("task has no name");
  if (t.mjcf_xml == nullptr) return absl::InvalidArgumentError(absl::StrCat("task ", t.name, " has no MJCF"));
  if (t.reset == nullptr || t.observe == nullptr || t.reward == nullptr || t.success_condition == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("task ", t.name, " lacks a required callback"));
  }
  if (t.control_substeps < 1 || t.max_steps < 1 || t.num_obs_keys < 1 || t.obs_keys == nullptr ||
      t.success_kind < ROBOLOOP_SUCCESS_EVERY_STEP || t.success_kind > ROBOLOOP_SUCCESS_HELD_FOR) {
    return absl::InvalidArgumentError(absl::StrCat(
        "task ", t.name, ": substeps, max_steps and obs keys must be positive and success_kind valid"));
  }
  if (t.num_cameras < 0 || (t.num_cameras > 0 && t.cameras == nullptr)) {
    return absl::InvalidArgumentError(absl::StrCat("task ", t.name, ": num_cameras ", t.num_cameras,
                                                   " does not match its cameras array"));
  }
  return CheckPluginTaskNames(t);
}

// Builds task `t` of the library labelled `library` ("task plugin <path>"), whose callbacks are
// `sites`; errors start with that label.
absl::StatusOr<std::unique_ptr<Task>> BuildPluginTask(const RoboloopTaskV1* t, const std::string& library,
                                                      PluginTaskSites sites) {
  TaskDefinition def;
  def.name = t->name;
  def.description = t->description != nullptr ? t->description : "";
  absl::StatusOr<ModelPtr> model = LoadModelFromString(def.name, t->mjcf_xml);
  if (!model.ok()) return Annotate(model.status(), library);
  def.model = std::move(*model);
  if (absl::Status actuated = CheckHasActuators(def.model.get()); !actuated.ok()) {
    return Annotate(actuated, absl::StrCat(library, ": plug-in task ", def.name));
  }
  for (int i = 0; i < t->num_obs_keys; ++i) {
    def.obs_spec.keys.push_back({t->obs_keys[i].name, {t->obs_keys[i].size}});
  }
  for (int i = 0; i < t->num_cameras; ++i) {
    const RoboloopCamera& camera = t->cameras[i];
    def.obs_spec.cameras.push_back({camera.name != nullptr ? camera.name : "",
                                    camera.camera != nullptr ? camera.camera : "", camera.width, camera.height});
  }
  ROBOLOOP_RETURN_IF_ERROR(PrepareTaskCameras(&def, absl::StrCat(library, ": plug-in task ", def.name)));
  def.action_spec = ActionSpecFromCtrlRange(def.model.get());
  def.control_substeps = t->control_substeps;
  def.max_steps = t->max_steps;
  def.success = {static_cast<SuccessRule::Kind>(t->success_kind), t->success_steps};
  return std::unique_ptr<Task>(new PluginTask(std::move(def), t, sites));
}

// Registers the tasks of `library`, loaded from `path` and labelled `label` in errors.
absl::Status RegisterPluginTasks(void* library, const std::string& path, const std::string& label,
                                 TaskRegistry* registry) {
  auto entry = reinterpret_cast<RoboloopTaskPluginEntry>(dlsym(library, ROBOLOOP_TASK_PLUGIN_ENTRY));
  if (entry == nullptr) {
    return absl::NotFoundError(absl::StrCat("no entry point '", ROBOLOOP_TASK_PLUGIN_ENTRY, "'"));
  }
  const RoboloopTaskV1* tasks = nullptr;
  int32_t count = 0;
  {
    ScopedPluginCall call(NewPluginCallSite(absl::StrCat("task plug-in library ", path), "entry point"));
    count = entry(ROBOLOOP_TASK_PLUGIN_ABI_VERSION, &tasks);
  }
  if (count < 0) {
    return absl::FailedPreconditionError(absl::StrCat("the entry point failed: it returned ", count,
                                                      " when given this roboloop's plugin ABI version ",
                                                      ROBOLOOP_TASK_PLUGIN_ABI_VERSION));
  }
  if (count > 0 && tasks == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("the entry point returned ", count, " tasks but no task array"));
  }
  for (int32_t i = 0; i < count; ++i) ROBOLOOP_RETURN_IF_ERROR(ValidatePluginTask(tasks[i]));
  for (int32_t i = 0; i < count; ++i) {
    const RoboloopTaskV1* task = &tasks[i];
    const PluginTaskSites sites =
        NewPluginTaskSites(absl::StrCat("task plug-in ", task->name, " (library ", path, ")"));
    ROBOLOOP_RETURN_IF_ERROR(registry->Register(
        task->name, task->description != nullptr ? task->description : "",
        [task, label, sites] { return BuildPluginTask(task, label, sites); }));
  }
  return absl::OkStatus();
}

// dlopen would search the library path for a name without a '/'; a plug-in named that way is
// a file in the working directory, as a path is.
std::string DlopenPath(const std::string& path) {
  return path.find('/') == std::string::npos ? "./" + path : path;
}

}  // namespace

absl::Status LoadTaskPlugin(const std::string& path, TaskRegistry* registry) {
  ROBOLOOP_RETURN_IF_ERROR(Annotate(StartPluginCallGuard(), absl::StrCat("task plugin ", path)));
  // Plugins stay loaded: registered factories point into them.
  void* library = dlopen(DlopenPath(path).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("task plugin ", path, " failed to load: ", dlerror()));
  }
  const std::string label = absl::StrCat("task plugin ", path);
  return Annotate(RegisterPluginTasks(library, path, label, registry), label);
}

absl::Status LoadTaskPluginsFromEnvironment(TaskRegistry* registry) {
  const char* list = std::getenv("ROBOLOOP_TASK_PLUGINS");
  if (list == nullptr) return absl::OkStatus();
  for (absl::string_view path : absl::StrSplit(list, ':', absl::SkipEmpty())) {
    ROBOLOOP_RETURN_IF_ERROR(LoadTaskPlugin(std::string(path), registry));
  }
  return absl::OkStatus();
}

}  // namespace roboloop::sim
