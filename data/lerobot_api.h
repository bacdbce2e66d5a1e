// The entry point of libroboloop_lerobot.so, the on-demand library that holds LeRobot import and
// export (and with them Arrow/Parquet and FFmpeg, about 110 shared libraries that every other
// command would otherwise load at start-up; docs/lerobot.md). Both sides are built together by
// the same compiler, so the table passes C++ types.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "data/lerobot_export.h"
#include "data/lerobot_import.h"

namespace roboloop::data {

// Bumped when the table below or the option and result structs it passes change (3: the options'
// cancellation token).
inline constexpr int kLeRobotApiVersion = 3;

// What the library offers: the functions of lerobot_import.h and lerobot_export.h.
struct LeRobotApi {
  int version = kLeRobotApiVersion;
  absl::StatusOr<LeRobotImportResult> (*import_lerobot)(const LeRobotImportOptions&) = nullptr;
  absl::StatusOr<std::string> (*import_lerobot_cached)(const std::string&, const std::string&) = nullptr;
  absl::StatusOr<LeRobotExportResult> (*export_lerobot)(const LeRobotExportOptions&) = nullptr;
};

}  // namespace roboloop::data

// The library's one exported symbol: returns its table (never null).
#define ROBOLOOP_LEROBOT_ENTRY_POINT "roboloop_lerobot_api"
extern "C" const roboloop::data::LeRobotApi* roboloop_lerobot_api();
