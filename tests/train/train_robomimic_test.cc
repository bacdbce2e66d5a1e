// `roboloop train` on a file laid out as robomimic writes it (issue 26, item 3): float64
// observations and actions are converted at load (and the log says so, naming file and key),
// mask/train chooses the training demos and mask/valid gives a validation loss in the run's
// log, without changing the training steps.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "tests/util/subprocess.h"

namespace roboloop::train {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ProgramResult;
using testing::RunProgram;
using testing::RunRoboloop;

// Eight demos of 20-27 steps, float64 obs and actions; demo_6 and demo_7 are mask/valid.
constexpr char kWriteScript[] = R"PY(
import json, sys
import h5py
import numpy as np
rng = np.random.default_rng(0)
with h5py.File(sys.argv[1], "w") as f:
    data = f.create_group("data")
    total = 0
    for i in range(8):
        T = 20 + i
        g = data.create_group("demo_%d" % i)
        g.attrs["num_samples"] = T
        g.create_dataset("obs/object", data=rng.normal(size=(T, 10)))
        g.create_dataset("obs/robot0_eef_pos", data=rng.normal(size=(T, 3)))
        g.create_dataset("actions", data=rng.uniform(-1, 1, size=(T, 7)))
        g.create_dataset("rewards", data=np.zeros(T))
        g.create_dataset("dones", data=(np.arange(T) == T - 1).astype(np.int64))
        total += T
    data.attrs["total"] = total
    data.attrs["env_args"] = json.dumps({"env_name": "Lift", "type": 1, "env_kwargs": {}})
    f.create_dataset("mask/train", data=np.array(["demo_%d" % i for i in range(6)], dtype="S"))
    f.create_dataset("mask/valid", data=np.array(["demo_6", "demo_7"], dtype="S"))
)PY";

// A flow-matching head draws noise in the loss: validating must not shift the steps' noise.
constexpr char kConfig[] = R"(policy: {kind: transformer, history: 2, chunk: 2, d_model: 16, layers: 1, heads: 2,
         ffn: 32, flow_matching: true}
optimizer: {lr: 0.001}
batch_size: 16
seed: 5
)";

class TrainRobomimicTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(testing::MakeTempDir("train_robomimic"));
    std::ofstream(*dir_ + "/write.py") << kWriteScript;
    std::ofstream(*dir_ + "/config.yaml") << kConfig;
    const ProgramResult written = RunProgram({ROBOLOOP_PYTHON, *dir_ + "/write.py", Dataset()});
    ASSERT_EQ(written.exit_code, 0) << written.err;
  }

  static std::string Dataset() { return *dir_ + "/robomimic.hdf5"; }

  static ProgramResult Train(const std::string& root, std::vector<std::string> extra) {
    std::vector<std::string> args = {"train", *dir_ + "/config.yaml", "--dataset", Dataset(), "--root", root,
                                     "--steps", "6"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunRoboloop(args);
  }

  // The records of the only run's JSONL log under `root`.
  static std::vector<nlohmann::json> Records(const std::string& root) {
    std::vector<nlohmann::json> records;
    for (const auto& run : fs::directory_iterator(root + "/runs")) {
      std::ifstream in(run.path() / "train.jsonl");
      for (std::string line; std::getline(in, line);) records.push_back(nlohmann::json::parse(line));
    }
    return records;
  }

  // step -> loss of the "step" (or "validation") records under `root`.
  static std::map<int64_t, double> Losses(const std::string& root, const std::string& kind) {
    std::map<int64_t, double> losses;
    for (const nlohmann::json& record : Records(root)) {
      if (record.contains(kind)) losses[std::stoll(record[kind]["step"].get<std::string>())] = record[kind]["loss"];
    }
    return losses;
  }

  static std::string* dir_;
};

std::string* TrainRobomimicTest::dir_ = nullptr;

TEST_F(TrainRobomimicTest, Float64FeaturesAreConvertedAndTheLogNamesFileAndKey) {
  const ProgramResult run = Train(testing::MakeTempDir("f64"), {});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (const char* key : {"obs/object", "obs/robot0_eef_pos", "actions"}) {
    const std::string line = Dataset() + ": " + key + " is stored as float64; converted to float32 for training";
    EXPECT_THAT(run.err, HasSubstr(line));
    EXPECT_EQ(run.err.find(line), run.err.rfind(line)) << "logged once: " << key;
  }
}

TEST_F(TrainRobomimicTest, ValidationSplitLossIsLoggedWithoutChangingTraining) {
  const std::string plain = testing::MakeTempDir("plain"), validated = testing::MakeTempDir("validated");
  const ProgramResult a = Train(plain, {"--split", "train"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const ProgramResult b = Train(validated, {"--split", "train", "--validation-split", "valid", "--validate-every", "3"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_THAT(b.out, HasSubstr("validation loss"));
  EXPECT_THAT(b.err, Not(HasSubstr("training on every demo")));
  EXPECT_EQ(Losses(plain, "step"), Losses(validated, "step")) << "validating leaves the steps bit for bit";
  EXPECT_TRUE(Losses(plain, "validation").empty());
  const std::map<int64_t, double> validation = Losses(validated, "validation");
  ASSERT_EQ(validation.size(), 2u);
  for (int64_t step : {3, 6}) {
    ASSERT_TRUE(validation.count(step)) << "validated at step " << step;
    EXPECT_TRUE(std::isfinite(validation.at(step)) && validation.at(step) > 0);
  }
  for (const nlohmann::json& record : Records(validated)) {
    if (record.contains("validation")) {
      EXPECT_EQ(record["validation"]["windows"], "53");  // demo_6 + demo_7
    }
  }
}

TEST_F(TrainRobomimicTest, TheSplitChoosesTheTrainingDemos) {
  const std::string all = testing::MakeTempDir("all"), train = testing::MakeTempDir("train");
  const ProgramResult a = Train(all, {});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const ProgramResult b = Train(train, {"--split", "train"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(Losses(all, "step"), Losses(train, "step"));
  const ProgramResult leak = Train(testing::MakeTempDir("leak"), {"--validation-split", "valid"});
  ASSERT_EQ(leak.exit_code, 0) << leak.err;
  EXPECT_THAT(leak.err, HasSubstr("training on every demo, those of the validation split 'valid' too"));
}

TEST_F(TrainRobomimicTest, AnUnknownMaskNamesTheFileAndTheMasks) {
  for (const char* flag : {"--split", "--validation-split"}) {
    const ProgramResult run = Train(testing::MakeTempDir("badmask"), {flag, "test"});
    EXPECT_EQ(run.exit_code, 1) << flag;
    EXPECT_THAT(run.err, HasSubstr(Dataset() + ": no split 'test' (known: train, valid)")) << flag;
    EXPECT_THAT(run.out, Not(HasSubstr("step 1 "))) << flag;
  }
}

}  // namespace
}  // namespace roboloop::train
