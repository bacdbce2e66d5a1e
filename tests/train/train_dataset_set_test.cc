// `roboloop train` on many files as one dataset (issue 28, req 4): three files given as a
// repeated --dataset, a folder or a glob train exactly as their merge does (bitwise losses, in
// memory and streamed), a file that disagrees is named, and the checkpoint's lineage lists the
// set and every file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "tests/util/subprocess.h"

namespace roboloop::train {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::ProgramResult;
using testing::RoboloopBinary;
using testing::RunProgram;

// A small MLP, so that a step takes milliseconds.
constexpr char kConfig[] = R"(policy:
  kind: mlp
  history: 2
  chunk: 3
optimizer:
  lr: 0.001
batch_size: 8
steps: 6
seed: 5
)";

class TrainDatasetSetTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(testing::MakeTempDir("train_set"));
    fs::create_directories(Parts());
    std::vector<std::string> merge = {RoboloopBinary(), "data", "merge"};
    for (int part = 0; part < 3; ++part) {
      const std::string file = Part(part);
      const ProgramResult collect =
          RunProgram({RoboloopBinary(), "sim", "collect", "--task", "cartpole-swingup", "--policy", "expert",
                      "--episodes", std::to_string(2 + part), "--max-steps", "30", "--seed",
                      std::to_string(10 + part), "-o", file});
      ASSERT_EQ(collect.exit_code, 0) << collect.err;
      merge.push_back(file);
    }
    merge.insert(merge.end(), {"-o", Merged()});
    const ProgramResult merged = RunProgram(merge);
    ASSERT_EQ(merged.exit_code, 0) << merged.err;
    const ProgramResult pendulum = RunProgram({RoboloopBinary(), "sim", "collect", "--task", "pendulum-swingup",
                                               "--policy", "expert", "--episodes", "2", "--max-steps", "30",
                                               "-o", *dir_ + "/pendulum.hdf5"});
    ASSERT_EQ(pendulum.exit_code, 0) << pendulum.err;
    std::ofstream(*dir_ + "/config.yaml") << kConfig;
  }

  static std::string Parts() { return *dir_ + "/parts"; }
  static std::string Part(int part) { return Parts() + "/part-" + std::to_string(part) + ".hdf5"; }
  static std::string Merged() { return *dir_ + "/merged.hdf5"; }

  // Trains on `datasets` (each after --dataset) in `root` (default a fresh one); returns the root.
  static std::string Train(const std::vector<std::string>& datasets, const std::vector<std::string>& extra = {},
                           std::string root = "") {
    if (root.empty()) root = testing::MakeTempDir("set_root");
    std::vector<std::string> args = {"train", *dir_ + "/config.yaml", "--root", root};
    for (const std::string& dataset : datasets) args.insert(args.end(), {"--dataset", dataset});
    args.insert(args.end(), extra.begin(), extra.end());
    const ProgramResult run = testing::RunRoboloop(args);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    *last_err_ = run.err;
    return root;
  }

  // step -> loss from the only run's JSONL.
  static std::map<int64_t, double> Losses(const std::string& root) {
    std::map<int64_t, double> losses;
    for (const auto& run : fs::directory_iterator(root + "/runs")) {
      std::ifstream in(run.path() / "train.jsonl");
      for (std::string line; std::getline(in, line);) {
        const nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
        if (record.is_object() && record.contains("step")) {
          losses[std::stoll(record["step"].value("step", std::string("0")))] = record["step"]["loss"].get<double>();
        }
      }
    }
    return losses;
  }

  static std::string* dir_;
  static inline std::string* last_err_ = new std::string;  // stderr of the last Train
};

std::string* TrainDatasetSetTest::dir_ = nullptr;

TEST_F(TrainDatasetSetTest, ThreeFilesTrainBitwiseAsTheirMergeInMemory) {
  const std::map<int64_t, double> merged = Losses(Train({Merged()}));
  ASSERT_EQ(merged.size(), 6u);
  EXPECT_EQ(Losses(Train({Part(0), Part(1), Part(2)})), merged);
}

TEST_F(TrainDatasetSetTest, ThreeFilesTrainBitwiseAsTheirMergeStreamed) {
  const std::vector<std::string> stream = {"--data-cache-mb", "0.002"};  // 2 KiB: about two episodes
  const std::map<int64_t, double> merged = Losses(Train({Merged()}, stream));
  ASSERT_EQ(merged.size(), 6u);
  EXPECT_THAT(*last_err_, HasSubstr("streaming"));
  EXPECT_EQ(Losses(Train({Part(0), Part(1), Part(2)}, stream)), merged);
  EXPECT_THAT(*last_err_, AllOf(HasSubstr("streaming"), HasSubstr("and 2 more files of its set")));
}

TEST_F(TrainDatasetSetTest, AFolderAndAGlobAreTheirFilesInNameOrder) {
  const std::map<int64_t, double> merged = Losses(Train({Merged()}));
  EXPECT_EQ(Losses(Train({Parts()})), merged);
  EXPECT_EQ(Losses(Train({Parts() + "/part-*.hdf5"})), merged);
}

TEST_F(TrainDatasetSetTest, AFileWithOtherObservationsIsNamedBeforeTraining) {
  const std::string root = testing::MakeTempDir("set_bad");
  const ProgramResult run = RunProgram({RoboloopBinary(), "train", *dir_ + "/config.yaml", "--root", root, "--dataset",
                                        Part(0), "--dataset", *dir_ + "/pendulum.hdf5"});
  EXPECT_NE(run.exit_code, 0);
  EXPECT_THAT(run.err, AllOf(HasSubstr("pendulum.hdf5"), HasSubstr("obs"), HasSubstr(Part(0))));
  EXPECT_FALSE(fs::exists(root + "/runs"));
  const ProgramResult nothing = RunProgram({RoboloopBinary(), "train", *dir_ + "/config.yaml", "--root", root,
                                            "--dataset", Parts() + "/nothing-*.hdf5"});
  EXPECT_NE(nothing.exit_code, 0);
  EXPECT_THAT(nothing.err, HasSubstr("nothing-*.hdf5' matches no file"));
  // QA: a LeRobot folder that lost its meta/info.json was only said to have no *.hdf5 files.
  const std::string empty = testing::MakeTempDir("set_empty");
  const ProgramResult no_files =
      RunProgram({RoboloopBinary(), "train", *dir_ + "/config.yaml", "--root", root, "--dataset", empty + "/"});
  EXPECT_NE(no_files.exit_code, 0);
  EXPECT_THAT(no_files.err, HasSubstr("has no *.hdf5 files and is no LeRobot dataset (no meta/info.json)"));
}

TEST_F(TrainDatasetSetTest, TheCheckpointsLineageListsTheSetAndEveryFile) {
  const std::string root = Train({Parts()});
  const ProgramResult lineage =
      RunProgram({RoboloopBinary(), "registry", "lineage", "policy@latest", "--root", root, "--format", "json"});
  ASSERT_EQ(lineage.exit_code, 0) << lineage.err;
  std::map<std::string, std::vector<std::string>> parents;  // dataset name -> parent ids
  std::map<std::string, std::string> ids;                   // dataset name -> id
  const nlohmann::json response = nlohmann::json::parse(lineage.out);
  for (const nlohmann::json& dataset : response["datasets"]) {
    const std::string name = dataset["name"];
    ids[name] = dataset["id"];
    parents[name] = dataset.value("parent_ids", std::vector<std::string>());
  }
  ASSERT_EQ(ids.size(), 4u) << lineage.out;
  ASSERT_TRUE(ids.count("part-0-set")) << lineage.out;
  EXPECT_THAT(parents["part-0-set"], ::testing::UnorderedElementsAre(ids["part-0"], ids["part-1"], ids["part-2"]));
  const ProgramResult table = RunProgram({RoboloopBinary(), "registry", "lineage", "policy@latest", "--root", root});
  EXPECT_THAT(table.out, AllOf(HasSubstr("dataset-set"), HasSubstr("part-0-set:v1"), HasSubstr("part-2:v1")));
  // The set is a dataset reference of its own: a run on it records the same set.
  Train({"part-0-set:v1"}, {}, root);
  const ProgramResult again = RunProgram({RoboloopBinary(), "registry", "lineage", "policy@latest", "--root", root});
  EXPECT_THAT(again.out, AllOf(HasSubstr("part-0-set:v1"), HasSubstr("part-1:v1")));
}

}  // namespace
}  // namespace roboloop::train
