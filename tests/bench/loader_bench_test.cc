// bench/loader_bench end to end on a tiny dataset: the real binary (our side in a process of its
// own) and the Python DataLoader peer; both cameras' result lines must carry parseable figures.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <sstream>

#include "tests/util/subprocess.h"

namespace roboloop {
namespace {

// The number after `label` (a regex) and one space; -1 when absent.
double FigureAfter(const std::string& line, const std::string& label) {
  std::smatch match;
  if (!std::regex_search(line, match, std::regex(label + " ([0-9]+(\\.[0-9]+)?)"))) return -1;
  return std::stod(match[1]);
}

TEST(LoaderBenchTest, TinyRunPrintsBothCamerasFigures) {
  const std::string binary = (std::filesystem::path(testing::RoboloopBinary()).parent_path() / "loader_bench").string();
  const testing::ProgramResult result =
      testing::RunProgram({binary, "--episodes", "8", "--steps", "30", "--side", "24", "--runs", "1", "--warmup",
                           "1", "--batches", "3", "--cache-mb", "1"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_THAT(result.out, ::testing::HasSubstr("cpu: "));
  for (const std::string cameras : {"front", "front,wrist"}) {
    std::istringstream in(result.out);
    std::string found;
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("result [" + cameras + "]:", 0) == 0) found = line;
    }
    ASSERT_FALSE(found.empty()) << cameras << "\n" << result.out;
    EXPECT_GT(FigureAfter(found, "ours"), 0) << found;
    EXPECT_GT(FigureAfter(found, "peer"), 0) << found;
    EXPECT_GT(FigureAfter(found, "peak RSS"), 0) << found;
    EXPECT_GT(FigureAfter(found, "ratio"), 0) << found;
    EXPECT_TRUE(std::regex_search(found, std::regex("\\(goal >= 2x: (met|NOT met)\\)"))) << found;
  }
}

}  // namespace
}  // namespace roboloop
