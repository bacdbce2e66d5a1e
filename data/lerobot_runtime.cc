#include "data/lerobot_runtime.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"
#include "common/fs.h"
#include "common/runtime_library.h"

namespace roboloop::data {
namespace {

constexpr char kLibraryName[] = "libroboloop_lerobot.so";

absl::StatusOr<const LeRobotApi*> Load() {
  const absl::StatusOr<LibraryEntry> entry = OpenLibraryEntry(
      LibraryCandidates(ExecutableFolder(), kLibraryName, "ROBOLOOP_LEROBOT_LIBRARY"), ROBOLOOP_LEROBOT_ENTRY_POINT,
      RTLD_NOW | RTLD_LOCAL);
  if (!entry.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("LeRobot support (", kLibraryName,
                                                      ") could not be loaded: ", entry.status().message()));
  }
  const LeRobotApi* api = reinterpret_cast<const LeRobotApi* (*)()>(entry->symbol)();
  if (api->version != kLeRobotApiVersion) {
    return absl::FailedPreconditionError(absl::StrCat(entry->path, ": LeRobot support API version ", api->version,
                                                      ", this program needs ", kLeRobotApiVersion));
  }
  return api;
}

}  // namespace

bool IsLeRobotFolder(const std::string& dir) { return PathExists(JoinPath(dir, "meta/info.json")); }

absl::StatusOr<const LeRobotApi*> LoadLeRobot() {
  static const absl::StatusOr<const LeRobotApi*>* loaded = new absl::StatusOr<const LeRobotApi*>(Load());
  return *loaded;
}

}  // namespace roboloop::data
