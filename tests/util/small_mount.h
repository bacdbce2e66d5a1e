// Test helper for disk-full fault injection: runs the body of the current test on a small
// size-limited file system (tmpfs) that the test makes itself.
//
// The test binary runs the current test again, alone, inside a private user and mount
// namespace (`unshare -Urm`, which works as root and, where the kernel allows user namespaces,
// as a normal user; as root without user namespaces, `unshare -m`) where a tmpfs of the given
// size is mounted at a fresh directory. Only the mounting process and its children see the
// mount, so it disappears with them and nothing is left mounted on the host.
#pragma once

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "tests/util/subprocess.h"

namespace roboloop::testing {

// Where the calling test runs after EnterSmallMount.
struct SmallMount {
  enum class Where {
    kInside,       // this process is the re-run test: `dir` is the small mount
    kRanInside,    // this process ran the test inside a namespace: `child` is its result
    kUnavailable,  // no namespace or mount could be made: `reason` says why
  };
  Where where = Where::kUnavailable;
  std::string dir;      // kInside: the mounted directory (empty, `bytes` in size)
  ProgramResult child;  // kRanInside: exit code and output of the re-run test
  std::string reason;   // kUnavailable: why
};

// Makes a `bytes`-sized tmpfs for the current test (see the file comment). Called from the
// test body; the macro below is the usual way to use it.
SmallMount EnterSmallMount(int64_t bytes);

// Writes filler data into `dir` until the file system refuses more (ENOSPC) and returns the
// filler's path; removing it frees the space again. Empty string when the write failed for
// another reason.
std::string FillDisk(const std::string& dir);

}  // namespace roboloop::testing

// Runs the rest of the test body on a `bytes`-sized tmpfs whose directory is stored in the
// new std::string `dir_var`. Outside the namespace it checks the re-run test passed and
// returns; where no mount can be made the test is skipped with the reason.
#define ROBOLOOP_ON_SMALL_MOUNT(dir_var, bytes)                                                 \
  std::string dir_var;                                                                         \
  {                                                                                            \
    ::roboloop::testing::SmallMount small_mount_ = ::roboloop::testing::EnterSmallMount(bytes); \
    if (small_mount_.where == ::roboloop::testing::SmallMount::Where::kUnavailable) {          \
      GTEST_SKIP() << small_mount_.reason;                                                     \
    }                                                                                          \
    if (small_mount_.where == ::roboloop::testing::SmallMount::Where::kRanInside) {            \
      EXPECT_EQ(small_mount_.child.exit_code, 0)                                               \
          << "the test failed on its small mount:\n"                                           \
          << small_mount_.child.out << small_mount_.child.err;                                 \
      return;                                                                                  \
    }                                                                                          \
    dir_var = small_mount_.dir;                                                                \
  }
