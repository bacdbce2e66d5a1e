#include "tests/util/tiny_checkpoint.h"

#include <fstream>
#include <regex>

#include <gtest/gtest.h>

#include "tests/util/subprocess.h"

namespace roboloop::testing {

std::string MakeTinyCheckpoint(const TinyCheckpointOptions& o) {
  const std::string dir = MakeTempDir("tiny-checkpoint");
  const std::string dataset = dir + "/demos.hdf5";
  ProgramResult collect = RunProgram(
      {RoboloopBinary(), "sim", "collect", "--task", o.task, "--policy", "expert", "--episodes",
       std::to_string(o.episodes), "--first-episode", std::to_string(o.first_episode), "--max-steps",
       std::to_string(o.max_steps), "-o", dataset, "--root", o.root});
  EXPECT_EQ(collect.exit_code, 0) << collect.out << collect.err;
  if (collect.exit_code != 0) return "";
  const std::string config = dir + "/train.yaml";
  const std::string architecture = o.kind == "mlp" ? "hidden: [32]" : "d_model: 16, layers: 1, heads: 2, ffn: 32";
  std::ofstream(config) << "policy: {kind: " << o.kind << ", history: " << o.history << ", chunk: " << o.chunk
                        << ", " << architecture << "}\n";
  std::vector<std::string> train = {RoboloopBinary(), "train", config, "--root", o.root, "--dataset", dataset,
                                    "--steps", std::to_string(o.steps), "--batch-size", "16", "--model", o.model};
  if (o.validation_split) {
    ProgramResult split = RunProgram({RoboloopBinary(), "data", "split", dataset, "--valid", "0.34"});
    EXPECT_EQ(split.exit_code, 0) << split.out << split.err;
    train.insert(train.end(), {"--split", "train", "--validation-split", "valid", "--validate-every", "5"});
  }
  if (o.register_dataset) {
    ProgramResult registered =
        RunProgram({RoboloopBinary(), "data", "register", dataset, "--name", o.model + "-demos", "--root", o.root});
    EXPECT_EQ(registered.exit_code, 0) << registered.out << registered.err;
  }
  ProgramResult trained = RunProgram(train);
  EXPECT_EQ(trained.exit_code, 0) << trained.out << trained.err;
  std::smatch match;
  const std::regex checkpoint("checkpoint ([0-9a-f]{64})");
  EXPECT_TRUE(std::regex_search(trained.out, match, checkpoint)) << trained.out << trained.err;
  return match.empty() ? "" : match[1].str();
}

}  // namespace roboloop::testing
