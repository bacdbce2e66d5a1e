/* A small task plug-in for task_plugin_test and plugin_failure_test, built with -D flags that
 * break one thing each: TASK_NAME, OBS_KEY_NAME, CAMERA_NAME (declares one free camera), MJCF,
 * ENTRY_RESULT (what the entry point returns), NAN_REWARD_AFTER (a simulated time after which the
 * reward is NaN), NAN_OBS_AFTER (likewise the observation), OBS_OVERFLOW (how many floats observe
 * writes past its one declared float once the simulated time exceeds OBS_OVERFLOW_AFTER),
 * SEGFAULT_IN_REWARD (reward writes through a null pointer), ABORT_IN_RESET (reset calls abort),
 * STACK_OVERFLOW_IN_SUCCESS (success_condition recurses without end), HANG_IN_OBSERVE (observe
 * never returns; first printing PRINT_BEFORE_HANG to stdout, without a newline, when defined, and
 * locking stdout when LOCK_STDOUT_IN_HANG is) and ABORT_IN_ENTRY (the entry point calls abort). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "sim/task_plugin_abi.h"

#ifndef TASK_NAME
#define TASK_NAME "test-plugin"
#endif
#ifndef OBS_KEY_NAME
#define OBS_KEY_NAME "x"
#endif
#ifndef MJCF
#define MJCF                                                                                   \
  "<mujoco><option timestep='0.01'/><worldbody><body><joint name='x' type='slide' axis='1 0 0'/>" \
  "<geom size='0.1' mass='1'/></body></worldbody><actuator><motor joint='x' ctrlrange='-1 1'/>"   \
  "</actuator></mujoco>"
#endif
#ifndef ENTRY_RESULT
#define ENTRY_RESULT 1
#endif

static const RoboloopObsKey kObsKeys[] = {{OBS_KEY_NAME, 1}};
#ifdef CAMERA_NAME
static const RoboloopCamera kCameras[] = {{CAMERA_NAME, "", 8, 8}};
#define NUM_CAMERAS 1
#define CAMERAS kCameras
#else
#define NUM_CAMERAS 0
#define CAMERAS NULL
#endif

#ifdef SEGFAULT_IN_REWARD
static int* volatile null_pointer = NULL; /* volatile: the compiler cannot turn the write into a trap */
#endif

static void Reset(const mjModel* m, mjData* d, RoboloopRng* rng) {
  (void)m;
  d->qpos[0] = rng->uniform(rng->state, -0.1, 0.1);
#ifdef ABORT_IN_RESET
  abort();
#endif
}

static void Observe(const mjModel* m, const mjData* d, float* obs) {
  (void)m;
  obs[0] = (float)d->qpos[0];
#ifdef NAN_OBS_AFTER
  if (d->time > NAN_OBS_AFTER) obs[0] = NAN;
#endif
#ifdef OBS_OVERFLOW
  if (d->time > OBS_OVERFLOW_AFTER) {
    for (int i = 1; i <= OBS_OVERFLOW; ++i) obs[i] = 0.5f;
  }
#endif
#ifdef HANG_IN_OBSERVE
#ifdef PRINT_BEFORE_HANG
  fputs(PRINT_BEFORE_HANG, stdout);
#endif
#ifdef LOCK_STDOUT_IN_HANG
  flockfile(stdout);
#endif
  for (;;) sleep(1);
#endif
}

static double Reward(const mjModel* m, const mjData* d) {
  (void)m;
#ifdef NAN_REWARD_AFTER
  if (d->time > NAN_REWARD_AFTER) return NAN;
#endif
#ifdef SEGFAULT_IN_REWARD
  *null_pointer = 1;
#endif
  return -fabs(d->qpos[0]);
}

#ifdef STACK_OVERFLOW_IN_SUCCESS
static int Recurse(int depth) {
  volatile char frame[1024];
  frame[0] = (char)depth;
  return Recurse(depth + 1) + frame[0];
}
#endif

static int SuccessCondition(const mjModel* m, const mjData* d) {
  (void)m;
#ifdef STACK_OVERFLOW_IN_SUCCESS
  if (Recurse(0) == 0) return 1;
#endif
  return fabs(d->qpos[0]) < 0.01;
}

static const RoboloopTaskV1 kTasks[] = {{ROBOLOOP_TASK_PLUGIN_ABI_VERSION, TASK_NAME, "A test task.", MJCF, 1,
                                         kObsKeys, 1, 20, ROBOLOOP_SUCCESS_FINAL_STEPS, 1, &Reset, &Observe,
                                         &Reward, &SuccessCondition, NULL, NUM_CAMERAS, CAMERAS}};

int32_t roboloop_task_plugin(uint32_t host_abi_version, const RoboloopTaskV1** tasks) {
  (void)host_abi_version;
#ifdef ABORT_IN_ENTRY
  abort();
#endif
  *tasks = kTasks;
  return ENTRY_RESULT;
}
