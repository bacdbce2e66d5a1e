#include "data/lerobot_api.h"

extern "C" __attribute__((visibility("default"))) const roboloop::data::LeRobotApi* roboloop_lerobot_api() {
  static const roboloop::data::LeRobotApi api = {roboloop::data::kLeRobotApiVersion, &roboloop::data::ImportLeRobot,
                                                 &roboloop::data::ImportLeRobotCached,
                                                 &roboloop::data::ExportLeRobot};
  return &api;
}
