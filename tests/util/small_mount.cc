#include "tests/util/small_mount.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

namespace roboloop::testing {
namespace {

// Set in the re-run test's environment: the directory the small tmpfs is mounted at.
constexpr char kMountDirEnv[] = "ROBOLOOP_SMALL_MOUNT_DIR";

// Mounts a tmpfs of size $1 at $2, then runs the remaining arguments in its place.
constexpr char kMountThenExec[] =
    "mount -t tmpfs -o size=\"$1\" tmpfs \"$2\" && shift 2 && exec \"$@\"";

std::string FindUnshare() {
  for (const char* path : {"/usr/bin/unshare", "/bin/unshare"}) {
    if (::access(path, X_OK) == 0) return path;
  }
  return "";
}

// This test binary's path (/proc/self/exe itself would name the shell in the namespace).
std::string TestBinary() {
  std::vector<char> path(4096, '\0');
  const ssize_t length = ::readlink("/proc/self/exe", path.data(), path.size() - 1);
  return length > 0 ? std::string(path.data(), static_cast<size_t>(length)) : "/proc/self/exe";
}

std::vector<std::string> MountCommand(const std::string& unshare, const std::string& flags,
                                      int64_t bytes, const std::string& dir) {
  return {unshare, flags, "/bin/sh", "-c", kMountThenExec, "sh", std::to_string(bytes), dir};
}

// The unshare flags that can mount a tmpfs here: a user and mount namespace first (root or
// not), a mount namespace alone for root without user namespaces. Empty when neither works;
// `why` then holds what the last attempt printed.
std::string WorkingFlags(const std::string& unshare, std::string* why) {
  std::vector<std::string> candidates = {"-Urm"};
  if (::geteuid() == 0) candidates.push_back("-m");
  for (const std::string& flags : candidates) {
    std::vector<std::string> probe = MountCommand(unshare, flags, 4096, MakeTempDir("probe"));
    probe.push_back("/bin/true");
    ProgramResult result = RunProgram(probe);
    if (result.exit_code == 0) return flags;
    *why = "unshare " + flags + ": " + result.err;
  }
  return "";
}

}  // namespace

SmallMount EnterSmallMount(int64_t bytes) {
  SmallMount mount;
  if (const char* dir = std::getenv(kMountDirEnv); dir != nullptr) {
    mount.where = SmallMount::Where::kInside;
    mount.dir = dir;
    return mount;
  }
  const std::string unshare = FindUnshare();
  if (unshare.empty()) {
    mount.reason = "no unshare(1) to make a private mount namespace for a small tmpfs";
    return mount;
  }
  std::string why;
  const std::string flags = WorkingFlags(unshare, &why);
  if (flags.empty()) {
    mount.reason = "cannot mount a small tmpfs in a private namespace (user namespaces "
                   "disallowed and not root?): " + why;
    return mount;
  }
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string dir = MakeTempDir("small-mount");
  std::vector<std::string> argv = MountCommand(unshare, flags, bytes, dir);
  argv.push_back(TestBinary());
  argv.push_back(std::string("--gtest_filter=") + test->test_suite_name() + "." + test->name());
  mount.where = SmallMount::Where::kRanInside;
  mount.child = RunProgram(argv, {std::string(kMountDirEnv) + "=" + dir});
  return mount;
}

std::string FillDisk(const std::string& dir) {
  const std::string path = dir + "/filler";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno == ENOSPC ? path : "";
  const std::vector<char> block(4096, 'f');
  int error = 0;
  while (error == 0) {
    if (::write(fd, block.data(), block.size()) < 0 && errno != EINTR) error = errno;
  }
  ::close(fd);
  return error == ENOSPC ? path : "";
}

}  // namespace roboloop::testing
