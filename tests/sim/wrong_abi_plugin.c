/* A plugin that claims a future ABI version; the loader must refuse it (task_plugin_test). */
#include "sim/task_plugin_abi.h"

static const RoboloopObsKey kObsKeys[] = {{"x", 1}};
static const RoboloopTaskV1 kTasks[] = {{999u, "from-the-future", "", "<mujoco/>", 1, kObsKeys,
                                         1, 1, ROBOLOOP_SUCCESS_FINAL_STEPS, 1, NULL, NULL, NULL,
                                         NULL, NULL}};

int32_t roboloop_task_plugin(uint32_t host_abi_version, const RoboloopTaskV1** tasks) {
  (void)host_abi_version;
  *tasks = kTasks;
  return 1;
}
