// A small YAML task with camera observations for the sim tests: a puck driven towards a
// mocap target, seen by the MJCF camera 'top' (32x32) and the free camera (24 wide, 16 high).
#pragma once

#include <stdlib.h>

#include <fstream>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "sim/yaml_task.h"

namespace roboloop::sim::testing {

inline constexpr char kCameraModel[] = R"(<mujoco model="camera_reach">
  <option timestep="0.01"><flag contact="disable" gravity="disable"/></option>
  <worldbody>
    <light pos="0 0 2" dir="0 0 -1" castshadow="false"/>
    <camera name="top" pos="0 0 1.2" xyaxes="1 0 0 0 1 0"/>
    <camera name="side" pos="0 -1.5 0.5" xyaxes="1 0 0 0 0.3 1"/>
    <geom type="plane" size="0.6 0.6 0.01" rgba="0.3 0.3 0.35 1"/>
    <body name="puck" pos="0 0 0.05">
      <joint name="x" type="slide" axis="1 0 0" damping="1"/>
      <joint name="y" type="slide" axis="0 1 0" damping="1"/>
      <geom type="sphere" size="0.06" mass="0.5" rgba="0.9 0.2 0.1 1"/>
      <site name="tip" size="0.01"/>
    </body>
    <body name="target" mocap="true" pos="0 0 0.05">
      <geom type="box" size="0.05 0.05 0.05" contype="0" conaffinity="0" rgba="0.1 0.8 0.2 1"/>
    </body>
  </worldbody>
  <actuator>
    <motor joint="x" gear="2" ctrllimited="true" ctrlrange="-1 1"/>
    <motor joint="y" gear="2" ctrllimited="true" ctrlrange="-1 1"/>
  </actuator>
</mujoco>
)";

// The task's YAML up to (not including) its cameras.
inline constexpr char kCameraTaskHead[] = R"(name: camera-reach
description: Drive a puck to a target seen from above.
mjcf: camera_reach.xml
control_substeps: 2
max_steps: 12
goals:
  - {name: target, mocap_body: target, low: [-0.3, -0.3, 0.05], high: [0.3, 0.3, 0.05]}
observations:
  - {name: puck, site_pos: tip}
reward:
  - {type: site_goal_distance, site: tip, goal: target, weight: -1.0}
success:
  condition: {type: site_goal_distance, site: tip, goal: target, below: 0.03}
  rule: held_for
  steps: 2
reset_noise:
  - {joint: x, low: -0.2, high: 0.2}
  - {joint: y, low: -0.2, high: 0.2}
)";

inline constexpr char kCameras[] = R"(cameras:
  - {name: top, camera: top, width: 32, height: 32}
  - {name: view, width: 24, height: 16}
)";

// Writes the model and a task file `<name>.yaml` (kCameraTaskHead + `cameras`) into a fresh
// directory of its own under the test's temp dir (tests running at once never share one);
// returns the task file's path.
inline std::string WriteCameraTask(const std::string& name, const std::string& cameras = kCameras) {
  std::string dir = ::testing::TempDir() + "/camera_task_" + name + "_XXXXXX";
  EXPECT_NE(mkdtemp(dir.data()), nullptr) << "cannot create " << dir;
  std::ofstream(dir + "/camera_reach.xml") << kCameraModel;
  const std::string path = dir + "/" + name + ".yaml";
  std::ofstream(path) << kCameraTaskHead << cameras;
  return path;
}

// The camera task with kCameras; fails the test on error.
inline std::unique_ptr<Task> CameraTask() {
  auto task = LoadYamlTask(WriteCameraTask("ok"));
  EXPECT_TRUE(task.ok()) << task.status();
  return task.ok() ? std::move(task).value() : nullptr;
}

}  // namespace roboloop::sim::testing
