/* Reference out-of-tree task plugin (docs/adding-a-task.md): "plugin-slider-reach", a mass
 * on a rail driven by a force to a sampled target. Build it on its own (docs/adding-a-task.md
 * says where MuJoCo's headers are):
 *   cc -shared -fPIC -I<roboloop source dir> -I<mujoco include dir> slider_reach_plugin.c -o libslider_reach.so
 * and load it with --task-plugin libslider_reach.so (a file in the working directory) or
 * ROBOLOOP_TASK_PLUGINS. */
#include <math.h>

#include "sim/task_plugin_abi.h"

/* The camera 'side' looks down at the rail from the front (51 degrees below the horizon), so the
 * grey floor fills its frame: a blue cart on the rail and, in front of it, a red disk on the floor
 * marking the target. Headlight and overhead light give 0.7 of each colour without specular
 * highlights, so the frame is lit but not saturated (the floor a mid grey); the light casts no
 * shadow (a shadow map costs more than a 32x32 frame). */
static const char kMjcf[] =
    "<mujoco model='slider_reach'>"
    "  <option timestep='0.01'><flag contact='disable' gravity='disable'/></option>"
    "  <visual><headlight ambient='0.2 0.2 0.2' diffuse='0.3 0.3 0.3' specular='0 0 0'/></visual>"
    "  <worldbody>"
    "    <light pos='0 0 2' dir='0 0 -1' castshadow='false' diffuse='0.2 0.2 0.2' specular='0 0 0'/>"
    "    <geom name='floor' type='plane' pos='0 0 -0.06' size='2 2 0.1' rgba='.8 .8 .8 1'/>"
    "    <body name='cart'>"
    "      <joint name='rail' type='slide' axis='1 0 0' damping='0.5'/>"
    "      <geom type='box' size='0.06 0.06 0.06' mass='1' rgba='.2 .3 .9 1'/>"
    "    </body>"
    "    <body name='target' mocap='true' pos='0 -0.14 -0.06'>"
    "      <geom type='cylinder' size='0.06 0.001' contype='0' conaffinity='0' rgba='.95 .1 .1 1'/>"
    "    </body>"
    "    <camera name='side' pos='0 -0.8 1' xyaxes='1 0 0 0 1 0.8' fovy='60'/>"
    "  </worldbody>"
    "  <actuator><motor joint='rail' gear='5' ctrllimited='true' ctrlrange='-1 1'/></actuator>"
    "</mujoco>";

static const RoboloopObsKey kObsKeys[] = {{"position", 1}, {"velocity", 1}, {"target", 1}};

/* A 32x32 view of the rail from the MJCF camera 'side', stored as obs/side_image. (The
 * tests build the example with another camera name to see it refused.) */
#ifndef SLIDER_REACH_CAMERA
#define SLIDER_REACH_CAMERA "side"
#endif
static const RoboloopCamera kCameras[] = {{"side", SLIDER_REACH_CAMERA, 32, 32}};

static void Reset(const mjModel* m, mjData* d, RoboloopRng* rng) {
  (void)m;
  d->mocap_pos[0] = rng->uniform(rng->state, -0.5, 0.5);
}

static void Observe(const mjModel* m, const mjData* d, float* obs) {
  (void)m;
  obs[0] = (float)d->qpos[0];
  obs[1] = (float)d->qvel[0];
  obs[2] = (float)d->mocap_pos[0];
}

static double Distance(const mjData* d) { return fabs(d->qpos[0] - d->mocap_pos[0]); }

static double Reward(const mjModel* m, const mjData* d) {
  (void)m;
  return -Distance(d);
}

static int SuccessCondition(const mjModel* m, const mjData* d) {
  (void)m;
  return Distance(d) < 0.02;
}

static const RoboloopTaskV1 kTasks[] = {{
    ROBOLOOP_TASK_PLUGIN_ABI_VERSION,
    "plugin-slider-reach",
    "Drive a mass on a rail to a target drawn uniformly in ±0.5 m; 100 steps at 50 Hz; "
    "success = within 0.02 m of the target at each of the final 10 steps.",
    kMjcf,
    3,
    kObsKeys,
    2,
    100,
    ROBOLOOP_SUCCESS_FINAL_STEPS,
    10,
    &Reset,
    &Observe,
    &Reward,
    &SuccessCondition,
    NULL,
    1,
    kCameras,
}};

int32_t roboloop_task_plugin(uint32_t host_abi_version, const RoboloopTaskV1** tasks) {
  if (host_abi_version != ROBOLOOP_TASK_PLUGIN_ABI_VERSION) return -1;
  *tasks = kTasks;
  return 1;
}
