// What the run progress printer writes to the terminal and to stage logs.
#include "pipeline/run_progress.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "absl/strings/cord.h"
#include "tests/util/subprocess.h"

namespace roboloop::pipeline {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

class RunProgressTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("progress");
    out_ = std::fopen((dir_ + "/out.txt").c_str(), "w+");
    ASSERT_NE(out_, nullptr);
    printer_ = std::make_unique<RunProgressPrinter>(out_, dir_ + "/logs");
  }
  void TearDown() override { std::fclose(out_); }

  std::string Printed() {
    std::fflush(out_);
    return testing::ReadWholeFile(dir_ + "/out.txt");
  }

  std::string dir_;
  FILE* out_ = nullptr;
  std::unique_ptr<RunProgressPrinter> printer_;
};

TEST_F(RunProgressTest, FinishedLinesShortenIdsButNotPathsOrOtherValues) {
  const std::string hash(64, 'a');
  const std::string path = ".roboloop/pipeline/runs/some-run/report.html";
  StageEvent finished;
  finished.kind = StageEvent::Kind::kFinished;
  finished.stage = "report";
  finished.outputs = {{"dataset", hash}, {"path", path}, {"run", "74e67e13-4ee1-4b2c-9a55-0123456789ab"}};
  printer_->OnEvent(finished);
  EXPECT_THAT(Printed(), AllOf(HasSubstr("dataset=aaaaaaaaaaaa,"), Not(HasSubstr(hash)), HasSubstr("path=" + path + ","),
                               HasSubstr("run=74e67e13-4ee")));
  EXPECT_THAT(testing::ReadWholeFile(printer_->LogPath("report")), HasSubstr("path=" + path));
}

TEST_F(RunProgressTest, AFailureIsLoggedWithoutItsStatusPayloads) {
  absl::Status failure = absl::FailedPreconditionError("stage improve: condition not met");
  failure.SetPayload("type.roboloop.dev/pipeline.UnmetLoop", absl::Cord("1\nimprove\n"));
  StageEvent failed;
  failed.kind = StageEvent::Kind::kFailed;
  failed.stage = "improve";
  failed.status = failure;
  printer_->OnEvent(failed);
  const std::string log = testing::ReadWholeFile(printer_->LogPath("improve"));
  EXPECT_THAT(log, HasSubstr("failed: FAILED_PRECONDITION: stage improve: condition not met"));
  EXPECT_THAT(log, Not(HasSubstr("type.roboloop.dev")));
}

}  // namespace
}  // namespace roboloop::pipeline
