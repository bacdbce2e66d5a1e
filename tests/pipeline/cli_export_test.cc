// `roboloop export` driven as a user would (issue 6, req 7): a checkpoint with real weights
// registered in a real store and exported to a folder, and the refusals (bad reference, a
// dataset, no policy blob, a TorchScript policy, a non-empty folder). That the folder runs in
// Python like the C++ policy is tests/train/export_python_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/train/policy_test_files.h"
#include "tests/util/subprocess.h"
#include "train/safetensors.h"

namespace roboloop {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::ProgramResult;

// The mlp of the exported checkpoint: 4 observations -> 8 hidden -> 1 action.
const std::vector<int64_t> kWidths = {4, 8, 1};

nlohmann::json Normalization() {
  return {{"obs", {{"mean", {0.5, -1.0, 0.0, 2.0}}, {"std", {2.0, 0.5, 1.0, 4.0}}}},
          {"action", {{"mean", {0.25}}, {"std", {3.0}}}}};
}

nlohmann::json PolicyOptions() {
  return {{"kind", "mlp"}, {"obs_dim", 4}, {"action_dim", 1}, {"history", 1},
          {"chunk", 1},    {"hidden", {8}}, {"activation", "tanh"}};
}

class CliExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("cli_export");
    root_ = dir_ + "/store";
  }

  ProgramResult Roboloop(std::vector<std::string> args, std::vector<std::string> env = {}) {
    args.insert(args.end(), {"--root", root_});
    return testing::RunRoboloop(args, env);
  }

  std::string WriteFile(const std::string& name, const std::string& data) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << data;
    return path;
  }

  std::string Manifest(const std::string& kind) {
    nlohmann::json manifest = {
        {"format_version", 1},
        {"model", "x"},
        {"policy", {{"kind", kind}, {"options", PolicyOptions()}}},
        {"obs_spec", {{"names", {"qpos"}}, {"shapes", {{4}}}}},
        {"action_spec", {{"names", {"force"}}, {"shapes", {{1}}}}},
        {"normalization", Normalization()},
        {"action_chunk", {{"horizon", 1}, {"execution", "receding"}}},
        {"dataset_id", ""},
        {"parent_id", ""},
        {"step", 10},
        {"metrics", nlohmann::json::object()},
        {"blobs", nlohmann::json::object()},
        {"provenance", nlohmann::json::object()}};
    return WriteFile("manifest-" + kind + ".json", manifest.dump());
  }

  // Registers checkpoint `model` with `blobs` (ROLE=PATH); returns its id.
  std::string PutCheckpoint(const std::string& model, const std::string& kind,
                            const std::vector<std::string>& blobs) {
    std::vector<std::string> args = {"registry", "put", "--model", model,
                                     "--manifest", Manifest(kind)};
    for (const std::string& blob : blobs) args.insert(args.end(), {"--blob", blob});
    ProgramResult put = Roboloop(args);
    EXPECT_EQ(put.exit_code, 0) << put.err;
    return put.out.substr(put.out.rfind(' ') + 1, 64);
  }

  // A real policy blob (seeded mlp weights) and a trainer-state blob.
  std::vector<std::string> PolicyBlobs() {
    const std::string policy = dir_ + "/policy.safetensors";
    EXPECT_TRUE(train::WriteSafetensors(policy, train::testing::RandomMlpTensors(kWidths, 9)).ok());
    return {"policy=" + policy, "trainer_state=" + WriteFile("state.bin", "optimizer bytes")};
  }

  std::string dir_;
  std::string root_;
};

TEST_F(CliExportTest, WritesASelfContainedFolder) {
  const std::string id = PutCheckpoint("cartpole-mlp", "mlp", PolicyBlobs());
  const std::string out = dir_ + "/exported";
  const std::string maps = dir_ + "/maps.txt";
  ProgramResult exported =
      Roboloop({"export", "cartpole-mlp@latest", "-o", out}, {"ROBOLOOP_MAPS_REPORT=" + maps});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_THAT(exported.out, HasSubstr("exported checkpoint cartpole-mlp:v1"));
  // Exporting needs no LibTorch (docs/architecture.md §1: the torch boundary).
  EXPECT_THAT(testing::ReadWholeFile(maps), Not(HasSubstr("libtorch")));
  EXPECT_THAT(testing::ReadWholeFile(maps), HasSubstr("libc"));

  EXPECT_EQ(testing::ReadWholeFile(out + "/model.safetensors"),
            testing::ReadWholeFile(dir_ + "/policy.safetensors"));
  EXPECT_EQ(testing::ReadWholeFile(out + "/roboloop_policy.py"),
            testing::ReadWholeFile(ROBOLOOP_SOURCE_DIR "/python/roboloop_policy.py"));
  EXPECT_EQ(nlohmann::json::parse(testing::ReadWholeFile(out + "/normalization.json")),
            Normalization());
  const nlohmann::json config = nlohmann::json::parse(testing::ReadWholeFile(out + "/config.json"));
  EXPECT_EQ(config["format"], "roboloop-policy");
  EXPECT_EQ(config["version"], 1);
  EXPECT_EQ(config["policy"]["kind"], "mlp");
  nlohmann::json complete = PolicyOptions();  // with the defaults of the options of policies that see
  complete.update({{"cameras", nlohmann::json::array()}, {"encoder_channels", 32}, {"encoder_blocks", 2},
                   {"keypoints", 32}});
  EXPECT_EQ(config["policy"]["options"], complete);
  EXPECT_EQ(config["obs_spec"]["names"][0], "qpos");
  EXPECT_EQ(config["action_spec"]["names"][0], "force");
  EXPECT_EQ(config["action_chunk"]["execution"], "receding");
  EXPECT_EQ(config["checkpoint_id"], id);
  EXPECT_EQ(config["model"], "cartpole-mlp");
}

TEST_F(CliExportTest, RefusesABadReference) {
  ProgramResult missing = Roboloop({"export", "nothing:v3", "-o", dir_ + "/out"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("nothing"));
  ProgramResult malformed = Roboloop({"export", "bad name!", "-o", dir_ + "/out"});
  EXPECT_EQ(malformed.exit_code, 1);
  EXPECT_THAT(malformed.err, HasSubstr("bad name!"));
  EXPECT_FALSE(std::ifstream(dir_ + "/out/config.json").good());
}

TEST_F(CliExportTest, RefusesADataset) {
  ASSERT_EQ(Roboloop({"registry", "put", WriteFile("demo.hdf5", "bytes"), "--dataset", "demos"})
                .exit_code,
            0);
  ProgramResult exported = Roboloop({"export", "demos:v1", "-o", dir_ + "/out"});
  EXPECT_EQ(exported.exit_code, 1);
  EXPECT_THAT(exported.err, HasSubstr("'demos:v1' is dataset demos:v1, not a checkpoint"));
}

TEST_F(CliExportTest, RefusesACheckpointWithoutPolicyBlob) {
  PutCheckpoint("stateonly", "mlp", {"trainer_state=" + WriteFile("state.bin", "optimizer")});
  ProgramResult exported = Roboloop({"export", "stateonly:v1", "-o", dir_ + "/out"});
  EXPECT_EQ(exported.exit_code, 1);
  EXPECT_THAT(exported.err, HasSubstr("checkpoint stateonly:v1 has no 'policy' blob"));
}

TEST_F(CliExportTest, RefusesATorchScriptPolicy) {
  PutCheckpoint("scripted", "torchscript", {"policy=" + WriteFile("policy.pt", "zip bytes")});
  ProgramResult exported = Roboloop({"export", "scripted:v1", "-o", dir_ + "/out"});
  EXPECT_EQ(exported.exit_code, 1);
  EXPECT_THAT(exported.err, HasSubstr("policy kind 'torchscript', which does not export"));
}

TEST_F(CliExportTest, AFailedExportLeavesNothingBehind) {
  PutCheckpoint("cartpole-mlp", "mlp", PolicyBlobs());
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root_ + "/blobs")) {
    if (entry.is_regular_file()) std::ofstream(entry.path(), std::ios::trunc) << "flipped bytes";
  }
  ProgramResult corrupt = Roboloop({"export", "cartpole-mlp:v1", "-o", dir_ + "/new/exported"});
  EXPECT_EQ(corrupt.exit_code, 1);
  EXPECT_THAT(corrupt.err, HasSubstr("corrupt"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/new"));

  ProgramResult empty = Roboloop({"export", "cartpole-mlp:v1", "-o", ""});
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_THAT(empty.err, HasSubstr("-o/--output: the destination folder is empty"));
}

// A checkpoint registered with a hand-written manifest and a truncated policy blob (its hash is
// the truncated file's, so it verifies) is refused, and an earlier export in the folder stays whole.
TEST_F(CliExportTest, RefusesATruncatedPolicyBlobAndKeepsTheEarlierExport) {
  const std::vector<std::string> blobs = PolicyBlobs();
  PutCheckpoint("cartpole-mlp", "mlp", blobs);
  const std::string out = dir_ + "/exported";
  ProgramResult good = Roboloop({"export", "cartpole-mlp:v1", "-o", out});
  ASSERT_EQ(good.exit_code, 0) << good.err;
  const std::string weights = testing::ReadWholeFile(out + "/model.safetensors");

  const std::string whole = testing::ReadWholeFile(dir_ + "/policy.safetensors");
  PutCheckpoint("cut", "mlp", {"policy=" + WriteFile("cut.safetensors", whole.substr(0, whole.size() / 2))});
  ProgramResult cut = Roboloop({"export", "cut:v1", "-o", out, "--force"});
  EXPECT_EQ(cut.exit_code, 1);
  EXPECT_THAT(cut.err, HasSubstr("checkpoint cut:v1: its policy blob is no policy PyTorch could load"));
  EXPECT_EQ(testing::ReadWholeFile(out + "/model.safetensors"), weights);
  EXPECT_FALSE(std::filesystem::exists(out + "/model.safetensors.fetched"));
}

TEST_F(CliExportTest, RefusesANonEmptyFolderWithoutForce) {
  PutCheckpoint("cartpole-mlp", "mlp", PolicyBlobs());
  const std::string out = dir_ + "/occupied";
  ASSERT_EQ(testing::RunProgram({"/bin/mkdir", "-p", out}).exit_code, 0);
  std::ofstream(out + "/notes.txt") << "mine";
  ProgramResult refused = Roboloop({"export", "cartpole-mlp:v1", "-o", out});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.err, HasSubstr("output folder " + out + " is not empty"));
  EXPECT_FALSE(std::ifstream(out + "/config.json").good());

  ProgramResult forced = Roboloop({"export", "cartpole-mlp:v1", "-o", out, "--force"});
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_TRUE(std::ifstream(out + "/config.json").good());
  EXPECT_EQ(testing::ReadWholeFile(out + "/notes.txt"), "mine");
}

// QA: `export -o FILE` said "cannot list FILE: Not a directory"; now it says that the output exists and is no
// folder, with and without --force, and leaves the file as it was.
TEST_F(CliExportTest, RefusesAnOutputThatIsAFile) {
  PutCheckpoint("cartpole-mlp", "mlp", PolicyBlobs());
  const std::string out = WriteFile("taken.txt", "mine");
  for (const std::vector<std::string>& extra : {std::vector<std::string>{}, {"--force"}}) {
    std::vector<std::string> args = {"export", "cartpole-mlp:v1", "-o", out};
    args.insert(args.end(), extra.begin(), extra.end());
    const ProgramResult refused = Roboloop(args);
    EXPECT_EQ(refused.exit_code, 1) << refused.err;
    EXPECT_THAT(refused.err, HasSubstr("-o/--output " + out + " exists and is not a folder"));
    EXPECT_EQ(testing::ReadWholeFile(out), "mine");
  }
}

}  // namespace
}  // namespace roboloop
