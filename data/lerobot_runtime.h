// Arrow- and FFmpeg-free access to LeRobot import and export: the first call maps
// libroboloop_lerobot.so (lerobot_api.h) into the process, so commands that never touch a LeRobot
// folder do not pay for its libraries.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "data/lerobot_api.h"

namespace roboloop::data {

// True when `dir` holds meta/info.json (a LeRobot dataset folder).
bool IsLeRobotFolder(const std::string& dir);

// The library's table, loaded once from ROBOLOOP_LEROBOT_LIBRARY, else next to the executable
// or in ../lib; FailedPrecondition listing each path tried and why it failed.
absl::StatusOr<const LeRobotApi*> LoadLeRobot();

}  // namespace roboloop::data
