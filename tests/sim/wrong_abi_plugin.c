/* A plugin that claims ABI version CLAIMED_ABI_VERSION (default: one from the future); the
 * loader must refuse it (task_plugin_test). */
#include "sim/task_plugin_abi.h"

#ifndef CLAIMED_ABI_VERSION
#define CLAIMED_ABI_VERSION 999u
#endif

static const RoboloopObsKey kObsKeys[] = {{"x", 1}};
static const RoboloopTaskV1 kTasks[] = {{CLAIMED_ABI_VERSION, "from-the-future", "", "<mujoco/>", 1, kObsKeys,
                                         1, 1, ROBOLOOP_SUCCESS_FINAL_STEPS, 1, NULL, NULL, NULL,
                                         NULL, NULL, 0, NULL}};

int32_t roboloop_task_plugin(uint32_t host_abi_version, const RoboloopTaskV1** tasks) {
  (void)host_abi_version;
  *tasks = kTasks;
  return 1;
}
