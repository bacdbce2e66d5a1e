#include "common/version.h"

#include "absl/strings/str_cat.h"

namespace roboloop {

const char* Version() { return ROBOLOOP_VERSION; }

const char* GitSha() { return ROBOLOOP_GIT_SHA; }

std::string VersionLine() { return absl::StrCat("roboloop ", Version(), " (", GitSha(), ")"); }

}  // namespace roboloop
