// Dataset tools: info, merge (every sample exactly once; errors name the output or the input at
// fault), split (deterministic partition) and the registration metadata.
#include <hdf5.h>

#include <fstream>
#include <set>

#include "absl/strings/str_cat.h"
#include "data/dataset_reader.h"
#include "data/dataset_writer.h"
#include "common/fs.h"
#include "common/sha256.h"
#include "data/seed_ranges.h"
#include "data/tools.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/test_util.h"

namespace roboloop::data {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::CorruptChunk;
using testing::MakeEpisode;
using testing::OpenOrDie;
using testing::TempDir;
using testing::WriteDataset;

std::vector<std::string> DemoNames(int count) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) names.push_back(DemoName(i));
  return names;
}

TEST(MergeTest, KeepsEverySampleExactlyOnceInOrder) {
  TempDir dir;
  const std::vector<Episode> a = WriteDataset(dir.File("a.hdf5"), {4, 6});
  const std::vector<Episode> b = WriteDataset(dir.File("b.hdf5"), {3, 5, 2});
  MergeOptions options;
  options.inputs = {dir.File("a.hdf5"), dir.File("b.hdf5")};
  options.output = dir.File("m.hdf5");
  auto layout = MergeDatasets(options);
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->demos.size(), 5u);
  EXPECT_EQ(layout->total_steps, 20);
  EXPECT_TRUE(layout->has_stats);
  std::vector<Episode> expected = a;
  expected.insert(expected.end(), b.begin(), b.end());
  auto merged = OpenOrDie(options.output);
  for (size_t i = 0; i < expected.size(); ++i) {
    auto episode = merged->ReadEpisode(DemoName(i));
    ASSERT_TRUE(episode.ok()) << episode.status();
    for (const auto& [name, array] : expected[i]) {
      EXPECT_EQ(episode->at(name).bytes, array.bytes) << DemoName(i) << "/" << name;
    }
  }
  EXPECT_EQ(layout->lineage.operation, "merge");
  ASSERT_EQ(layout->lineage.parents.size(), 2u);
  EXPECT_EQ(layout->lineage.parents[1].path, dir.File("b.hdf5"));
  EXPECT_EQ(layout->lineage.parents[1].sha256, *Sha256File(dir.File("b.hdf5")));
  EXPECT_EQ(layout->lineage.parents[0].kind, "dataset");
}

// A merge cancelled (as Ctrl-C cancels `data merge`) returns Cancelled, leaves no file under a temporary name and
// keeps the file an earlier merge wrote as it was.
TEST(MergeTest, ACancelledMergeLeavesNoFileAndKeepsTheOldOne) {
  TempDir dir;
  WriteDataset(dir.File("a.hdf5"), {4, 6});
  MergeOptions options;
  options.inputs = {dir.File("a.hdf5"), dir.File("a.hdf5")};
  options.output = dir.File("m.hdf5");
  ASSERT_TRUE(MergeDatasets(options).ok());
  const std::string before = ReadFile(options.output).value_or("");
  common::CancellationToken cancel;
  cancel.Cancel("received SIGINT");
  options.overwrite = true;
  options.cancel = &cancel;
  const absl::StatusOr<DatasetLayout> layout = MergeDatasets(options);
  EXPECT_EQ(layout.status().code(), absl::StatusCode::kCancelled) << layout.status();
  EXPECT_EQ(layout.status().message(), "merge cancelled (received SIGINT)");
  EXPECT_THAT(testing::NamesStartingWith(dir.path(), "m.hdf5"), ElementsAre("m.hdf5"));
  EXPECT_EQ(ReadFile(options.output).value_or(""), before);
}

// QA: an output that could not be written was named by a temporary name derived twice
// (m.hdf5.partial-<uuid>.partial-<uuid>): the merge wrote to a temporary and the writer to its own.
// Then by its one temporary; now, for a missing folder, by the output asked for and the folder,
// and nothing is left.
TEST(MergeTest, AnOutputThatCannotBeWrittenIsNamedWithItsMissingFolder) {
  TempDir dir;
  WriteDataset(dir.File("a.hdf5"), {4, 6});
  MergeOptions options;
  options.inputs = {dir.File("a.hdf5"), dir.File("a.hdf5")};
  options.output = dir.File("missing/m.hdf5");
  const absl::StatusOr<DatasetLayout> layout = MergeDatasets(options);
  ASSERT_FALSE(layout.ok());
  EXPECT_EQ(layout.status().message(),
            "writing " + options.output + ": folder " + dir.File("missing") + " does not exist");
  EXPECT_THAT(testing::NamesStartingWith(dir.path(), "m"), ::testing::IsEmpty());
}

// An input whose demo cannot be read is named, and the output is not written.
TEST(MergeTest, AnUnreadableInputIsNamedAndNoOutputIsLeft) {
  TempDir dir;
  WriteDataset(dir.File("a.hdf5"), {3, 3}, R"({"env_name": "Lift"})", testing::MakeBandedImageEpisode);
  WriteDataset(dir.File("b.hdf5"), {3, 3}, R"({"env_name": "Lift"})", testing::MakeBandedImageEpisode);
  ASSERT_NO_FATAL_FAILURE(CorruptChunk(dir.File("b.hdf5"), std::string("data/demo_1/") + testing::kImageKey, 1));
  MergeOptions options;
  options.inputs = {dir.File("a.hdf5"), dir.File("b.hdf5")};
  options.output = dir.File("m.hdf5");
  const absl::StatusOr<DatasetLayout> layout = MergeDatasets(options);
  ASSERT_FALSE(layout.ok());
  EXPECT_THAT(std::string(layout.status().message()), ::testing::StartsWith(dir.File("b.hdf5") + ": "));
  EXPECT_THAT(testing::NamesStartingWith(dir.path(), "m.hdf5"), ::testing::IsEmpty());
}

TEST(MergeTest, CarriesMasksRenamed) {
  TempDir dir;
  WriteDataset(dir.File("a.hdf5"), {4, 6});
  WriteDataset(dir.File("b.hdf5"), {3, 5});
  ASSERT_TRUE(SplitDataset(dir.File("a.hdf5"), 0.5, 1).ok());
  ASSERT_TRUE(SplitDataset(dir.File("b.hdf5"), 0.5, 1).ok());
  const auto a_valid = OpenOrDie(dir.File("a.hdf5"))->layout().masks.at("valid");
  const auto b_valid = OpenOrDie(dir.File("b.hdf5"))->layout().masks.at("valid");
  MergeOptions options;
  options.inputs = {dir.File("a.hdf5"), dir.File("b.hdf5")};
  options.output = dir.File("m.hdf5");
  auto layout = MergeDatasets(options);
  ASSERT_TRUE(layout.ok()) << layout.status();
  const std::string b_renamed = DemoName(2 + *ParseDemoIndex(b_valid[0]));
  EXPECT_THAT(layout->masks.at("valid"), ElementsAre(a_valid[0], b_renamed));
  EXPECT_EQ(layout->masks.at("train").size(), 2u);
}

TEST(MergeTest, RequiresTheSameSpec) {
  TempDir dir;
  WriteDataset(dir.File("a.hdf5"), {4});
  DatasetWriter::Options options;
  options.path = dir.File("b.hdf5");
  auto writer = DatasetWriter::Create(options);
  Episode episode = MakeEpisode(4, 0);
  episode["obs/qpos"] = Array::From<float>({4, 2}, std::vector<float>(8, 1.f));
  ASSERT_TRUE((*writer)->WriteEpisode(episode).ok());
  ASSERT_TRUE((*writer)->Close().ok());
  MergeOptions merge;
  merge.inputs = {dir.File("a.hdf5"), dir.File("b.hdf5")};
  merge.output = dir.File("m.hdf5");
  auto layout = MergeDatasets(merge);
  EXPECT_EQ(layout.status().message(),
            dir.File("b.hdf5") + ": obs/qpos is float32 [T, 2], expected float32 [T, 3] (as in " +
                dir.File("a.hdf5") + ")");
  EXPECT_FALSE(std::filesystem::exists(merge.output));
}

TEST(MergeTest, RequiresTheSameTask) {
  TempDir dir;
  WriteDataset(dir.File("a.hdf5"), {4});
  WriteDataset(dir.File("b.hdf5"), {4}, R"({"env_name": "Can"})");
  WriteDataset(dir.File("c.hdf5"), {4}, R"({"type": 1})");
  MergeOptions merge;
  merge.inputs = {dir.File("a.hdf5"), dir.File("b.hdf5")};
  merge.output = dir.File("m.hdf5");
  EXPECT_EQ(MergeDatasets(merge).status().message(),
            dir.File("b.hdf5") + ": task 'Can', but " + dir.File("a.hdf5") +
                " has task 'Lift' (merge only datasets of one task)");
  merge.inputs = {dir.File("a.hdf5"), dir.File("c.hdf5")};
  EXPECT_EQ(MergeDatasets(merge).status().message(),
            dir.File("c.hdf5") + ": no task (env_args without env_name), but " + dir.File("a.hdf5") +
                " has task 'Lift' (merge only datasets of one task)");
  EXPECT_FALSE(std::filesystem::exists(merge.output));
}

// A collect records its seed range in env_kwargs; a merge lists every input's, nested merges included, so that a
// seed check of the merged file sees all the seeds it holds, not the first input's alone.
TEST(MergeTest, RecordsEveryInputsSeedRange) {
  TempDir dir;
  const auto collected = [](int first) {
    return absl::StrCat(R"({"env_name": "Lift", "env_kwargs": {"base_seed": 7, "first_episode": )", first,
                        R"(, "num_episodes": 4, "task": "Lift"}})");
  };
  WriteDataset(dir.File("a.hdf5"), {4}, collected(0));
  WriteDataset(dir.File("b.hdf5"), {4}, collected(4));
  WriteDataset(dir.File("c.hdf5"), {4}, collected(100));
  MergeOptions merge;
  merge.inputs = {dir.File("a.hdf5"), dir.File("b.hdf5"), dir.File("a.hdf5")};
  merge.output = dir.File("ab.hdf5");
  ASSERT_TRUE(MergeDatasets(merge).ok());
  merge.inputs = {dir.File("ab.hdf5"), dir.File("c.hdf5")};
  merge.output = dir.File("abc.hdf5");
  ASSERT_TRUE(MergeDatasets(merge).ok());
  const std::string env_args = OpenOrDie(dir.File("abc.hdf5"))->layout().env_args_json;
  absl::StatusOr<std::vector<CollectSeedRange>> ranges = RecordedSeedRanges(env_args);
  ASSERT_TRUE(ranges.ok()) << ranges.status();
  EXPECT_THAT(*ranges, ElementsAre(CollectSeedRange{7, 0, 4}, CollectSeedRange{7, 4, 4}, CollectSeedRange{7, 100, 4}));
  EXPECT_THAT(env_args, Not(HasSubstr("\"num_episodes\":4,\"task\"")));
  EXPECT_THAT(env_args, HasSubstr("\"task\":\"Lift\""));
}

TEST(SeedRangesTest, AMalformedRangeIsNamed) {
  EXPECT_TRUE(RecordedSeedRanges(R"({"env_name": "Lift"})")->empty());
  absl::StatusOr<std::vector<CollectSeedRange>> bad =
      RecordedSeedRanges(R"({"env_kwargs": {"seed_ranges": [{"num_episodes": 3}]}})");
  EXPECT_THAT(bad.status().message(), HasSubstr("env_args env_kwargs.seed_ranges[0]: not a seed range"));
}

TEST(SplitTest, AssignmentIsADeterministicPartition) {
  const std::vector<std::string> demos = DemoNames(50);
  auto first = AssignSplit(demos, 0.1, 42);
  auto again = AssignSplit(demos, 0.1, 42);
  auto other = AssignSplit(demos, 0.1, 43);
  ASSERT_TRUE(first.ok() && again.ok() && other.ok());
  EXPECT_EQ(first->valid.size(), 5u);
  EXPECT_EQ(first->train.size(), 45u);
  EXPECT_EQ(first->valid, again->valid);
  EXPECT_NE(first->valid, other->valid);
  std::set<std::string> all(first->train.begin(), first->train.end());
  all.insert(first->valid.begin(), first->valid.end());
  EXPECT_EQ(all.size(), 50u);
  EXPECT_EQ(AssignSplit(demos, 0.0, 1)->valid.size(), 0u);
  EXPECT_THAT(AssignSplit(demos, 1.0, 1).status().message(), HasSubstr("not in [0, 1)"));
}

TEST(SplitTest, EverySplitKeepsADemo) {
  const std::vector<std::string> demos = DemoNames(4);
  EXPECT_EQ(AssignSplit(demos, 0.99, 1).status().message(),
            "a valid fraction of 0.99 of 4 demos leaves 0 training and 4 valid demos; each split needs at least one");
  EXPECT_EQ(AssignSplit(demos, 0.1, 1).status().message(),
            "a valid fraction of 0.1 of 4 demos leaves 4 training and 0 valid demos; each split needs at least one");
  EXPECT_EQ(AssignSplit(demos, 0.0, 1)->train.size(), 4u);
  EXPECT_EQ(AssignSplit(demos, 0.25, 1)->valid.size(), 1u);
}

TEST(SplitTest, WritesMasksIntoTheFile) {
  TempDir dir;
  const std::string path = dir.File("d.hdf5");
  WriteDataset(path, {2, 2, 2, 2, 2, 2, 2, 2, 2, 2});
  auto split = SplitDataset(path, 0.3, 7);
  ASSERT_TRUE(split.ok()) << split.status();
  {
    auto reader = OpenOrDie(path);
    EXPECT_EQ(reader->layout().masks.at("train"), split->train);
    EXPECT_EQ(reader->layout().masks.at("valid"), split->valid);
  }
  EXPECT_EQ(split->valid.size(), 3u);
  auto resplit = SplitDataset(path, 0.5, 7);
  ASSERT_TRUE(resplit.ok()) << resplit.status();
  EXPECT_EQ(OpenOrDie(path)->layout().masks.at("valid").size(), 5u);
}

TEST(InfoTest, JsonListsEverything) {
  TempDir dir;
  const std::string path = dir.File("d.hdf5");
  WriteDataset(path, {3, 8});
  ASSERT_TRUE(SplitDataset(path, 0.5, 3).ok());
  ASSERT_TRUE(ComputeAndStoreStats(path, StatsOptions()).ok());
  auto info = GetInfo(path);
  ASSERT_TRUE(info.ok()) << info.status();
  const nlohmann::json json = InfoToJson(*info);
  EXPECT_EQ(json["num_demos"], 2);
  EXPECT_EQ(json["total_steps"], 11);
  EXPECT_EQ(json["demos"][1]["num_samples"], 8);
  EXPECT_EQ(json["env_args"]["env_name"], "Lift");
  EXPECT_EQ(json["splits"]["valid"].size(), 1u);
  EXPECT_EQ(json["features"][0]["name"], "actions");
  EXPECT_EQ(json["features"][0]["shape"], nlohmann::json::array({4}));
  EXPECT_EQ(json["stats"]["actions"]["count"], 11);
  EXPECT_EQ(json["lineage"]["operation"], "write");
  EXPECT_GT(json["file_bytes"].get<int64_t>(), 0);
  const std::string table = InfoToTable(*info);
  EXPECT_THAT(table, HasSubstr("demos      2 (11 steps; length min 3, max 8, mean 5.5)"));
  EXPECT_THAT(table, HasSubstr("obs/qpos             float32 [T, 3]"));
}

TEST(RegistrationTest, MetadataCarriesStatsSpecsAndParents) {
  TempDir dir;
  WriteDataset(dir.File("a.hdf5"), {4});
  WriteDataset(dir.File("b.hdf5"), {5});
  MergeOptions merge;
  merge.inputs = {dir.File("a.hdf5"), dir.File("b.hdf5")};
  merge.output = dir.File("m.hdf5");
  merge.compute_stats = false;
  ASSERT_TRUE(MergeDatasets(merge).ok());
  EXPECT_FALSE(OpenOrDie(merge.output)->layout().has_stats);
  const std::string before = *Sha256File(merge.output);
  auto registration = PrepareRegistration(merge.output, dir.File("scratch.hdf5"), StatsOptions());
  ASSERT_TRUE(registration.ok()) << registration.status();
  // The statistics go into the scratch copy that is uploaded; the user's file is not modified.
  EXPECT_EQ(*Sha256File(merge.output), before);
  EXPECT_EQ(registration->upload_path, dir.File("scratch.hdf5"));
  EXPECT_TRUE(OpenOrDie(registration->upload_path)->layout().has_stats);
  EXPECT_THAT(registration->parent_ids,
              ElementsAre(*Sha256File(dir.File("a.hdf5")), *Sha256File(dir.File("b.hdf5"))));
  const nlohmann::json& metadata = registration->metadata;
  EXPECT_EQ(metadata["format"], "robomimic_hdf5");
  EXPECT_EQ(metadata["num_demos"], 2);
  EXPECT_EQ(metadata["total_steps"], 9);
  EXPECT_EQ(metadata["stats"]["obs/qpos"]["mean"].size(), 3u);
  EXPECT_EQ(metadata["features"].size(), 8u);
  EXPECT_EQ(metadata["lineage"]["parents"].size(), 2u);
}

}  // namespace
}  // namespace roboloop::data
