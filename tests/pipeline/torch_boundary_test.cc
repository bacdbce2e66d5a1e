// The torch and GL boundaries (docs/architecture.md §1): torch-free commands never map LibTorch, and
// commands that do not render never map GL (libOSMesa pulls in LLVM, ICU and z3); the verbose
// version loads LibTorch on demand, with the OpenMP waiting roboloop chose.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/util/subprocess.h"

namespace roboloop {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ReadWholeFile;
using testing::RunProgram;

// Runs roboloop with `args` and returns the /proc/self/maps it reported at exit.
std::string MapsOf(const std::vector<std::string>& args, int* exit_code) {
  std::string report = testing::MakeTempDir("maps") + "/maps.txt";
  testing::ProgramResult r = testing::RunRoboloop(args, {"ROBOLOOP_MAPS_REPORT=" + report});
  *exit_code = r.exit_code;
  return ReadWholeFile(report);
}

TEST(TorchBoundaryTest, VersionDoesNotMapLibTorch) {
  int code = -1;
  std::string maps = MapsOf({"--version"}, &code);
  EXPECT_EQ(code, 0);
  ASSERT_THAT(maps, HasSubstr("roboloop"));  // the report is real
  EXPECT_THAT(maps, Not(HasSubstr("libtorch")));
  EXPECT_THAT(maps, Not(HasSubstr("libroboloop_torch")));
}

// Every GL library roboloop could render with, and what libOSMesa drags in.
const char* const kGlLibraries[] = {"libOSMesa", "libGL.so", "libEGL", "libOpenGL", "libLLVM"};

TEST(TorchBoundaryTest, RegistryListMapsNeitherLibTorchNorGl) {
  int code = -1;
  std::string root = testing::MakeTempDir("ls-root");
  std::string maps = MapsOf({"registry", "ls", "--root", root}, &code);
  EXPECT_EQ(code, 0);
  ASSERT_THAT(maps, HasSubstr("libmujoco"));  // the report is real and lists shared libraries
  EXPECT_THAT(maps, Not(HasSubstr("libtorch")));
  for (const char* gl : kGlLibraries) EXPECT_THAT(maps, Not(HasSubstr(gl))) << gl;
}

TEST(TorchBoundaryTest, VerboseVersionLoadsLibTorchOnDemand) {
  int code = -1;
  std::string maps = MapsOf({"--version", "--verbose"}, &code);
  EXPECT_EQ(code, 0);
  EXPECT_THAT(maps, HasSubstr("libroboloop_torch.so"));
  EXPECT_THAT(maps, HasSubstr("libtorch_cpu"));
  testing::ProgramResult r = RunProgram({testing::RoboloopBinary(), "--version", "--verbose"});
  EXPECT_THAT(r.out, HasSubstr("libtorch 2.11"));
  EXPECT_THAT(r.out, HasSubstr("cuda compiled in: yes (toolkit 13.0"));
  EXPECT_THAT(r.out, ContainsRegex("architectures [0-9]+\\.[0-9]"));
  EXPECT_THAT(r.out, HasSubstr("mujoco 3."));
  EXPECT_THAT(r.out, HasSubstr("intra-op threads"));
}

// What LibTorch's OpenMP runtime (libgomp) reports it read, for `roboloop --version --verbose`
// started with `env_args` (arguments of /usr/bin/env: -u NAME, NAME=value).
std::string OpenMpSettingsRead(const std::vector<std::string>& env_args) {
  std::vector<std::string> argv = {"/usr/bin/env", "-u", "OMP_WAIT_POLICY", "-u", "GOMP_SPINCOUNT",
                                   "OMP_DISPLAY_ENV=VERBOSE"};
  argv.insert(argv.end(), env_args.begin(), env_args.end());
  argv.insert(argv.end(), {testing::RoboloopBinary(), "--version", "--verbose"});
  testing::ProgramResult r = RunProgram(argv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.err;
}

TEST(TorchBoundaryTest, IdleLibTorchWorkersSpinBrieflyUnlessTheUserChose) {
  EXPECT_THAT(OpenMpSettingsRead({}), HasSubstr("GOMP_SPINCOUNT = '5000'"));
  const std::string passive = OpenMpSettingsRead({"OMP_WAIT_POLICY=PASSIVE"});
  EXPECT_THAT(passive, HasSubstr("OMP_WAIT_POLICY = 'PASSIVE'"));
  EXPECT_THAT(passive, HasSubstr("GOMP_SPINCOUNT = '0'"));
  EXPECT_THAT(OpenMpSettingsRead({"GOMP_SPINCOUNT=77"}), HasSubstr("GOMP_SPINCOUNT = '77'"));
}

TEST(TorchBoundaryTest, MissingOrBrokenTorchLibraryIsAClearError) {
  testing::ProgramResult missing =
      RunProgram({testing::RoboloopBinary(), "--version", "--verbose"},
                 {"ROBOLOOP_TORCH_LIBRARY=/nonexistent/libroboloop_torch.so"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("/nonexistent/libroboloop_torch.so (absent)"));
  std::string not_a_library = std::string(ROBOLOOP_SOURCE_DIR) + "/CMakeLists.txt";
  testing::ProgramResult broken = RunProgram({testing::RoboloopBinary(), "--version", "--verbose"},
                                             {"ROBOLOOP_TORCH_LIBRARY=" + not_a_library});
  EXPECT_EQ(broken.exit_code, 1);
  EXPECT_THAT(broken.err, HasSubstr(not_a_library));
}

TEST(TorchBoundaryTest, RoboloopBinaryLinksNeitherLibTorchNorGl) {
  testing::ProgramResult r = RunProgram({"/usr/bin/ldd", testing::RoboloopBinary()});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, Not(HasSubstr("libtorch")));
  EXPECT_THAT(r.out, Not(HasSubstr("libc10")));
  for (const char* gl : kGlLibraries) EXPECT_THAT(r.out, Not(HasSubstr(gl))) << gl;
}

}  // namespace
}  // namespace roboloop
