#include "common/progress.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace roboloop {
namespace {

using ::testing::HasSubstr;

TEST(ProgressTest, PlainFormatShowsCountRateAndEta) {
  ProgressBar::Options options;
  options.label = "upload";
  options.unit = "MiB";
  options.force_plain = true;
  ProgressBar bar(100, options);
  std::string text = bar.Format(25, 5.0);
  EXPECT_EQ(text, "upload 25/100 MiB (25%) 5.0 MiB/s ETA 15s");
}

TEST(ProgressTest, DoneShowsElapsedAndUnknownTotalHasNoEta) {
  ProgressBar::Options options;
  options.force_plain = true;
  ProgressBar done(10, options);
  EXPECT_THAT(done.Format(10, 2.0), HasSubstr("10/10 it (100%) 5.0 it/s in 2s"));
  ProgressBar open_ended(0, options);
  EXPECT_EQ(open_ended.Format(7, 1.0), "7 it 7.0 it/s");
}

TEST(ProgressTest, NonTtyPrintsPlainLinesAndFinishes) {
  char* buffer = nullptr;
  size_t size = 0;
  FILE* out = open_memstream(&buffer, &size);
  ProgressBar::Options options;
  options.out = out;
  options.plain_interval_s = 0.0;
  ProgressBar bar(4, options);
  bar.Update(2);
  bar.Finish();
  std::fclose(out);
  std::string text(buffer, size);
  free(buffer);
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_THAT(text, HasSubstr("2/4 it (50%)"));
  EXPECT_THAT(text, HasSubstr("\n"));
}

TEST(ProgressTest, FormatDuration) {
  EXPECT_EQ(FormatDuration(12.4), "12s");
  EXPECT_EQ(FormatDuration(185), "3m05s");
  EXPECT_EQ(FormatDuration(3720), "1h02m");
}

}  // namespace
}  // namespace roboloop
