// `roboloop bench train --quick` end to end: the real binary, the real LibTorch library and the
// Python peer; every part's result line must be present and carry parseable figures.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "tests/util/subprocess.h"

namespace roboloop {
namespace {

using ::testing::HasSubstr;

// The result lines of `out` whose text starts with `prefix`.
std::vector<std::string> ResultLines(const std::string& out, const std::string& prefix) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) lines.push_back(line);
  }
  return lines;
}

// The number after `label` (a regex) and one space, e.g. "ratio 1.23x" -> 1.23; -1 when absent.
double FigureAfter(const std::string& line, const std::string& label) {
  std::smatch match;
  if (!std::regex_search(line, match, std::regex(label + " ([0-9]+(\\.[0-9]+)?)"))) return -1;
  return std::stod(match[1]);
}

void ExpectSettingsAndGoal(const std::string& line) {
  EXPECT_TRUE(std::regex_search(line, std::regex("threads [1-9][0-9]* \\(OpenBLAS pool ([0-9]+|unknown)\\);"))) << line;
  EXPECT_THAT(line, HasSubstr("BLAS_INFO="));
  EXPECT_THAT(line, HasSubstr("cpu: "));
  EXPECT_TRUE(std::regex_search(line, std::regex("\\(goal [^)]*: (met|NOT MET)\\)"))) << line;
}

TEST(TrainBenchTest, QuickRunPrintsEveryPartsFigures) {
  const testing::ProgramResult result = testing::RunProgram(
      {"/usr/bin/env", "-u", "OMP_WAIT_POLICY", "-u", "GOMP_SPINCOUNT", testing::RoboloopBinary(), "bench", "train",
       "--quick"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("GOMP_SPINCOUNT=5000")) << "our side runs with roboloop's OpenMP choice";

  const std::vector<std::string> a = ResultLines(result.out, "result (a) model step:");
  ASSERT_EQ(a.size(), 1u) << result.out;
  EXPECT_GT(FigureAfter(a[0], "ours"), 0);
  EXPECT_GT(FigureAfter(a[0], "peer"), 0);
  EXPECT_GT(FigureAfter(a[0], "ratio"), 0);
  EXPECT_THAT(a[0], HasSubstr("OpenMP variables: none)")) << "the peer runs in the user's environment";
  ExpectSettingsAndGoal(a[0]);

  const std::vector<std::string> mfu = ResultLines(result.out, "result (a) MFU:");
  ASSERT_EQ(mfu.size(), 1u) << result.out;
  EXPECT_GT(FigureAfter(mfu[0], "MFU:"), 0);
  EXPECT_GT(FigureAfter(mfu[0], "of sgemm"), 0);
  EXPECT_GT(FigureAfter(mfu[0], "GFLOP/s \\(peer's torch.mm 1024x1024, same threads\\),"), 0);
  ExpectSettingsAndGoal(mfu[0]);

  const std::vector<std::string> b = ResultLines(result.out, "result (b) end to end:");
  ASSERT_EQ(b.size(), 1u) << result.out;
  EXPECT_GT(FigureAfter(b[0], "ratio"), 0);
  EXPECT_GT(FigureAfter(b[0], "windows, 1 loader worker each side; ours"), 0);
  ExpectSettingsAndGoal(b[0]);

  const std::vector<std::string> c = ResultLines(result.out, "result (c) packed vs padded:");
  ASSERT_EQ(c.size(), 1u) << result.out;
  EXPECT_GT(FigureAfter(c[0], "padded/real tokens"), 1.0);
  EXPECT_GT(FigureAfter(c[0], "packed/padded"), 0);
  ExpectSettingsAndGoal(c[0]);

  const std::vector<std::string> d = ResultLines(result.out, "result (d) data parallel:");
  ASSERT_EQ(d.size(), 1u) << result.out;
  EXPECT_GT(FigureAfter(d[0], "efficiency"), 0);
  EXPECT_GT(FigureAfter(d[0], "2 ranks x 1 thread"), 0);
  ExpectSettingsAndGoal(d[0]);

  const std::vector<std::string> v = ResultLines(result.out, "result (v) image-policy step:");
  ASSERT_EQ(v.size(), 1u) << result.out;
  EXPECT_GT(FigureAfter(v[0], "ours"), 0);
  EXPECT_GT(FigureAfter(v[0], "peer"), 0);
  EXPECT_GT(FigureAfter(v[0], "ratio"), 0);
  ExpectSettingsAndGoal(v[0]);
}

TEST(TrainBenchTest, UnknownPartIsRejectedByName) {
  const testing::ProgramResult result =
      testing::RunProgram({testing::RoboloopBinary(), "bench", "train", "--part", "z"});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.err, HasSubstr("--part 'z'"));
}

// Part g's settings (issue 22, req 7): a device or model it does not know is named.
TEST(TrainBenchTest, GpuPartSettingsAreCheckedByName) {
  const auto run = [](std::vector<std::string> flags) {
    std::vector<std::string> argv = {testing::RoboloopBinary(), "bench", "train"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return testing::RunProgram(argv);
  };
  const testing::ProgramResult device = run({"--device", "tpu"});
  EXPECT_NE(device.exit_code, 0);
  EXPECT_THAT(device.err, HasSubstr("--device 'tpu' is not one of cpu, cuda"));
  const testing::ProgramResult model = run({"--device", "cuda", "--model", "1b"});
  EXPECT_NE(model.exit_code, 0);
  EXPECT_THAT(model.err, HasSubstr("--model '1b' is not one of small, 151m"));
  const testing::ProgramResult graph = run({"--device", "cuda", "--cuda-graph", "yes"});
  EXPECT_NE(graph.exit_code, 0);
  EXPECT_THAT(graph.err, HasSubstr("--cuda-graph 'yes' is not one of on, off"));
}

}  // namespace
}  // namespace roboloop
