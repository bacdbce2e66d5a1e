// `roboloop report` opened in headless Chromium (issue 7, req 7): the page holds the
// leaderboard table, the success and loss plots and an animation of at least 30 distinct
// frames once its script ran; a screenshot is kept under <build>/test-artifacts/.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "tests/util/subprocess.h"
#include "tests/util/tiny_checkpoint.h"

namespace roboloop::cli {
namespace {

using ::testing::HasSubstr;
using roboloop::testing::ProgramResult;

constexpr char kChromium[] = "/usr/bin/chromium";

std::vector<std::string> Headless(const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {kChromium, "--headless", "--no-sandbox", "--disable-gpu",
                                   "--virtual-time-budget=3000"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

TEST(ReportBrowserTest, TheReportShowsItsTablePlotsAndAnAnimationInChromium) {
  ASSERT_TRUE(std::filesystem::exists(kChromium)) << "scripts/install-deps.sh installs chromium";
  const std::string dir = roboloop::testing::MakeTempDir("report");
  const std::string root = dir + "/store";
  roboloop::testing::TinyCheckpointOptions tiny;
  tiny.root = root;
  tiny.validation_split = true;
  tiny.register_dataset = true;  // its metadata (statistics of every feature) is long
  ASSERT_FALSE(roboloop::testing::MakeTinyCheckpoint(tiny).empty());
  std::ofstream(dir + "/gate.yaml") << "task: cartpole-swingup\nbase_seed: 0\nseed_start: 1000000\nepisodes: 6\n"
                                       "max_steps: 80\nexecution: {chunk: {mode: FULL_CHUNK}}\n";
  ProgramResult promoted = roboloop::testing::RunProgram(
      {roboloop::testing::RoboloopBinary(), "promote", "tiny", "--protocol", dir + "/gate.yaml", "--root", root});
  ASSERT_EQ(promoted.exit_code, 0) << promoted.out << promoted.err;
  const std::string page = dir + "/report.html";
  ProgramResult report = roboloop::testing::RunProgram(
      {roboloop::testing::RoboloopBinary(), "report", "--model", "tiny", "-o", page, "--root", root});
  ASSERT_EQ(report.exit_code, 0) << report.err;

  ProgramResult dom = roboloop::testing::RunProgram(Headless({"--dump-dom", "file://" + page}));
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  EXPECT_THAT(dom.out, HasSubstr("id=\"leaderboard\""));
  EXPECT_THAT(dom.out, HasSubstr("<td>tiny:v1"));
  EXPECT_THAT(dom.out, HasSubstr("id=\"success-chart\""));
  EXPECT_THAT(dom.out, HasSubstr("id=\"loss-chart\""));
  EXPECT_THAT(dom.out, HasSubstr("class=\"validation-loss\"")) << "the validation split's loss curve";
  EXPECT_THAT(dom.out, HasSubstr("width=\"640\" height=\"480\"")) << "the episode frames' size";
  std::smatch frames;
  ASSERT_TRUE(std::regex_search(dom.out, frames, std::regex("data-animation-frames=\"([0-9]+)\"")))
      << "the animation script ran";
  EXPECT_GE(std::stoi(frames[1]), 30) << "distinct frames of the best episode";

  // The page fits a 1000 px window: the dataset metadata column wraps instead of running off it.
  const std::string probe = dir + "/probe.html";
  std::ofstream(probe) << roboloop::testing::ReadWholeFile(page)
                       << "<script>document.body.dataset.overflowPx=String(Math.max(0,...[...document."
                          "querySelectorAll('table')].map(t=>Math.ceil(t.getBoundingClientRect().right-"
                          "document.documentElement.clientWidth))));</script>";
  ProgramResult fitted = roboloop::testing::RunProgram(Headless({"--window-size=1000,2000", "--dump-dom", "file://" + probe}));
  ASSERT_EQ(fitted.exit_code, 0) << fitted.err;
  EXPECT_THAT(fitted.out, HasSubstr("data-overflow-px=\"0\"")) << "a table runs off the page";

  const std::string artifacts = std::string(ROBOLOOP_BINARY_DIR) + "/test-artifacts";
  std::filesystem::create_directories(artifacts);
  const std::string shot = artifacts + "/report.png";
  std::filesystem::remove(shot);
  ProgramResult screenshot =
      roboloop::testing::RunProgram(Headless({"--window-size=1200,2200", "--screenshot=" + shot, "file://" + page}));
  ASSERT_EQ(screenshot.exit_code, 0) << screenshot.err;
  ASSERT_TRUE(std::filesystem::exists(shot));
  EXPECT_GT(std::filesystem::file_size(shot), 10000u);
}

TEST(ReportBrowserTest, BadRequestsAreNamed) {
  const std::string root = roboloop::testing::MakeTempDir("report-bad") + "/store";
  ProgramResult neither = roboloop::testing::RunProgram({roboloop::testing::RoboloopBinary(), "report", "--root", root});
  EXPECT_EQ(neither.exit_code, 2);
  EXPECT_THAT(neither.err, HasSubstr("exactly one of --model M and --run RUN"));
  ProgramResult run = roboloop::testing::RunProgram(
      {roboloop::testing::RoboloopBinary(), "report", "--run", "nosuch", "--root", root});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("no pipeline run nosuch"));
  ProgramResult unknown = roboloop::testing::RunProgram(
      {roboloop::testing::RoboloopBinary(), "report", "--model", "nobody", "-o", root + "/r.html", "--root", root});
  EXPECT_EQ(unknown.exit_code, 1) << unknown.err;
  EXPECT_THAT(unknown.err, HasSubstr("no model 'nobody' in the registry"));
  EXPECT_FALSE(std::filesystem::exists(root + "/r.html")) << "nothing is written for a model the registry lacks";
}

}  // namespace
}  // namespace roboloop::cli
