#include "common/runtime_library.h"

#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace roboloop {

std::string ExecutableFolder() {
  char buffer[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0) return ".";
  const std::string path(buffer, static_cast<size_t>(n));
  return path.substr(0, path.find_last_of('/'));
}

std::vector<std::string> LibraryCandidates(const std::string& folder, const std::string& file_name,
                                           const char* override_variable) {
  if (override_variable != nullptr) {
    if (const char* path = std::getenv(override_variable); path != nullptr && *path != '\0') return {path};
  }
  return {absl::StrCat(folder, "/", file_name), absl::StrCat(folder, "/../lib/", file_name)};
}

absl::StatusOr<LibraryEntry> OpenLibraryEntry(const std::vector<std::string>& candidates, const char* symbol,
                                              int dlopen_flags) {
  std::vector<std::string> reasons;
  for (const std::string& path : candidates) {
    if (access(path.c_str(), F_OK) != 0) {
      reasons.push_back(absl::StrCat(path, " (absent)"));
      continue;
    }
    void* handle = dlopen(path.c_str(), dlopen_flags);
    if (handle == nullptr) {
      reasons.push_back(absl::StrCat(path, " (", dlerror(), ")"));
      continue;
    }
    void* address = dlsym(handle, symbol);
    if (address == nullptr) {
      reasons.push_back(absl::StrCat(path, " (no symbol ", symbol, ")"));
      continue;
    }
    return LibraryEntry{path, address};
  }
  return absl::FailedPreconditionError(absl::StrCat("tried ", absl::StrJoin(reasons, "; ")));
}

}  // namespace roboloop
