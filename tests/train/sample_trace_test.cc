// The per-rank sample trace (docs/training.md, "Several machines"): one line per sample, one
// file per RANK, appended to by a resumed run, and a folder that cannot be made is an error
// naming it.
#include <fstream>
#include <iterator>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/test_util.h"
#include "train/sample_trace.h"

namespace roboloop::train {
namespace {

using ::testing::HasSubstr;

Batch TwoSamples(int64_t episode, int64_t first_step) {
  Batch batch;
  batch.batch_size = 2;
  batch.sample_episode = {episode, episode + 1};
  batch.sample_step = {first_step, first_step + 5};
  return batch;
}

TEST(SampleTraceTest, AppendsEachStepsSamplesToTheRanksFile) {
  data::testing::TempDir dir;
  const std::string folder = dir.File("trace");
  {
    auto trace = SampleTrace::Open(folder, 3);
    ASSERT_TRUE(trace.ok()) << trace.status();
    ASSERT_TRUE((*trace)->Append(1, TwoSamples(7, 0)).ok());
    ASSERT_TRUE((*trace)->Append(2, TwoSamples(2, 4)).ok());
  }
  auto resumed = SampleTrace::Open(folder, 3);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  ASSERT_TRUE((*resumed)->Append(3, TwoSamples(0, 1)).ok());
  std::ifstream in(folder + "/rank-3.tsv");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "1\t7\t0\n1\t8\t5\n2\t2\t4\n2\t3\t9\n3\t0\t1\n3\t1\t6\n");
}

TEST(SampleTraceTest, AFolderThatCannotBeMadeIsAnErrorNamingIt) {
  data::testing::TempDir dir;
  std::ofstream(dir.File("file")) << "not a folder";
  auto trace = SampleTrace::Open(dir.File("file") + "/trace", 0);
  ASSERT_FALSE(trace.ok());
  EXPECT_THAT(trace.status().message(), HasSubstr(dir.File("file")));
}

}  // namespace
}  // namespace roboloop::train
