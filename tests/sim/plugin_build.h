// Builds task plug-ins for the sim tests: a C source compiled into its own shared library
// against the public headers only (ours and MuJoCo's).
#pragma once

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace roboloop::sim::testing {

// Compiles `source` (with `flags`) into lib<name>.so in the test's temp dir and returns its
// path; fails the test when the compiler does.
inline std::string BuildPlugin(const std::string& source, const std::string& name, const std::string& flags = "") {
  const std::string output = ::testing::TempDir() + "/lib" + name + ".so";
  const std::string command = "cc -shared -fPIC -O1 -I" ROBOLOOP_SOURCE_DIR " -I" ROBOLOOP_MUJOCO_INCLUDE_DIR " " +
                              flags + " " + source + " -o " + output + " -lm";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  return output;
}

// The test plug-in tests/sim/test_plugin.c built with `flags` (its -D switches) as lib<name>.so.
inline std::string BuildTestPlugin(const std::string& name, const std::string& flags = "") {
  return BuildPlugin(ROBOLOOP_SOURCE_DIR "/tests/sim/test_plugin.c", name, flags);
}

}  // namespace roboloop::sim::testing
