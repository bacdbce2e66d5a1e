/* The C ABI of out-of-tree task plugins (issue 4, req 2b). A plugin is a shared library
 * that exports ROBOLOOP_TASK_PLUGIN_ENTRY; it includes only this header and MuJoCo's.
 * Version 3: camera observations (num_cameras, cameras at the end of RoboloopTaskV1).
 * Version 2: the structs of version 1, with MuJoCo 3's mjModel and mjData behind the callbacks'
 * pointers (version 1 plugins were built against MuJoCo 2.2.2, whose structs differ). Any change
 * to these structs or to MuJoCo's bumps ROBOLOOP_TASK_PLUGIN_ABI_VERSION, and roboloop refuses
 * plugins built for another version. See docs/adding-a-task.md. */
#ifndef ROBOLOOP_SIM_TASK_PLUGIN_ABI_H_
#define ROBOLOOP_SIM_TASK_PLUGIN_ABI_H_

#include <stdint.h>

#include <mujoco/mujoco.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ROBOLOOP_TASK_PLUGIN_ABI_VERSION 3u
#define ROBOLOOP_TASK_PLUGIN_ENTRY "roboloop_task_plugin"

/* The episode's random stream, owned by roboloop; draw only from it in reset. */
typedef struct RoboloopRng {
  void* state;                                           /* opaque */
  double (*uniform)(void* state, double low, double high); /* uniform in [low, high) */
} RoboloopRng;

/* One observation key: `size` floats named `name`, laid out in declaration order. */
typedef struct RoboloopObsKey {
  const char* name;
  int32_t size;
} RoboloopObsKey;

/* One camera observation: an RGB image, uint8 height x width x 3, rows top to bottom, rendered
 * by roboloop after every step (docs/vision.md). `camera` names an MJCF camera of the task's
 * model; NULL or "" = a free camera framing the model. Sizes lie in 1..2048. */
typedef struct RoboloopCamera {
  const char* name;
  const char* camera;
  int32_t width;
  int32_t height;
} RoboloopCamera;

/* How the per-step success condition becomes episode success. */
enum RoboloopSuccessKind {
  ROBOLOOP_SUCCESS_EVERY_STEP = 0, /* at every step of a full-length episode */
  ROBOLOOP_SUCCESS_FINAL_STEPS = 1, /* at each of the final success_steps steps */
  ROBOLOOP_SUCCESS_HELD_FOR = 2     /* for success_steps consecutive steps */
};

/* One task. All callbacks must be thread-safe for distinct mjData (keep no state; keep
 * goals in mjData, e.g. in mocap bodies). Actions go to ctrl unchanged (after clipping to
 * the actuators' ctrlrange). A callback that crashes is named on stderr before the process
 * dies of the signal; one that runs longer than the call limit (--plugin-call-timeout, else
 * $ROBOLOOP_PLUGIN_CALL_TIMEOUT_S seconds, default 60) ends the process (docs/adding-a-task.md, "When a plug-in fails"). */
typedef struct RoboloopTaskV1 {
  uint32_t abi_version;     /* ROBOLOOP_TASK_PLUGIN_ABI_VERSION the plugin was built with */
  const char* name;         /* registry name, unique */
  const char* description;  /* one paragraph, including success and termination */
  const char* mjcf_xml;     /* the task's MJCF document, inline */
  int32_t num_obs_keys;
  const RoboloopObsKey* obs_keys;
  int32_t control_substeps; /* physics steps per env step, >= 1 */
  int32_t max_steps;        /* horizon in env steps, >= 1 */
  int32_t success_kind;     /* a RoboloopSuccessKind */
  int32_t success_steps;    /* window of FINAL_STEPS / HELD_FOR */
  /* Sets the initial state; `d` was just reset to the model defaults. */
  void (*reset)(const mjModel* m, mjData* d, RoboloopRng* rng);
  /* Writes the sum of the obs keys' sizes floats; writing past them stops the rollout with an
   * error (roboloop checks guard floats after the buffer). */
  void (*observe)(const mjModel* m, const mjData* d, float* obs);
  double (*reward)(const mjModel* m, const mjData* d);
  int (*success_condition)(const mjModel* m, const mjData* d); /* non-zero = true */
  int (*terminated)(const mjModel* m, const mjData* d);        /* may be NULL: never */
  int32_t num_cameras;           /* version 3: camera observations, 0 for state-only tasks */
  const RoboloopCamera* cameras; /* num_cameras of them, in layout order; may be NULL when 0 */
} RoboloopTaskV1;

/* The entry point: given the host's ABI version, sets *tasks to an array of tasks that
 * stays valid while the library is loaded and returns its length (negative = failure). */
typedef int32_t (*RoboloopTaskPluginEntry)(uint32_t host_abi_version,
                                           const RoboloopTaskV1** tasks);

#ifdef __cplusplus
}
#endif

#endif /* ROBOLOOP_SIM_TASK_PLUGIN_ABI_H_ */
