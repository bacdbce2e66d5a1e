// Build identity of this roboloop binary.
#pragma once

#include <string>

namespace roboloop {

// Semantic version of the project, e.g. "0.1.0".
const char* Version();

// Short git commit the binary was configured from, or "unknown".
const char* GitSha();

// "roboloop <version> (<git sha>)".
std::string VersionLine();

}  // namespace roboloop
