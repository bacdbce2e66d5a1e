#include "data/lerobot_runtime.h"

#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/fs.h"

namespace roboloop::data {
namespace {

constexpr char kLibraryName[] = "libroboloop_lerobot.so";

std::vector<std::string> CandidatePaths() {
  if (const char* env = std::getenv("ROBOLOOP_LEROBOT_LIBRARY"); env != nullptr && *env != '\0') return {env};
  char buffer[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  const std::string exe = n > 0 ? std::string(buffer, static_cast<size_t>(n)) : "./roboloop";
  const std::string dir = exe.substr(0, exe.find_last_of('/'));
  return {JoinPath(dir, kLibraryName), JoinPath(dir, absl::StrCat("../lib/", kLibraryName))};
}

absl::StatusOr<const LeRobotApi*> Load() {
  std::vector<std::string> errors;
  for (const std::string& path : CandidatePaths()) {
    if (!PathExists(path)) {
      errors.push_back(absl::StrCat(path, " (absent)"));
      continue;
    }
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      errors.push_back(absl::StrCat(path, " (", dlerror(), ")"));
      continue;
    }
    auto entry = reinterpret_cast<const LeRobotApi* (*)()>(dlsym(handle, ROBOLOOP_LEROBOT_ENTRY_POINT));
    if (entry == nullptr) {
      errors.push_back(absl::StrCat(path, " (no symbol ", ROBOLOOP_LEROBOT_ENTRY_POINT, ")"));
      continue;
    }
    const LeRobotApi* api = entry();
    if (api->version != kLeRobotApiVersion) {
      errors.push_back(absl::StrCat(path, " (API version ", api->version, ", expected ", kLeRobotApiVersion, ")"));
      continue;
    }
    return api;
  }
  return absl::FailedPreconditionError(
      absl::StrCat("LeRobot support (", kLibraryName, ") could not be loaded: ", absl::StrJoin(errors, "; ")));
}

}  // namespace

bool IsLeRobotFolder(const std::string& dir) { return PathExists(JoinPath(dir, "meta/info.json")); }

absl::StatusOr<const LeRobotApi*> LoadLeRobot() {
  static const absl::StatusOr<const LeRobotApi*>* loaded = new absl::StatusOr<const LeRobotApi*>(Load());
  return *loaded;
}

}  // namespace roboloop::data
