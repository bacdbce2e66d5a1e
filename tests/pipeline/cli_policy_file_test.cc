// `roboloop registry put --policy-file` (issue 26, req 1) driven as a user would: a TorchScript
// file exported by the project environment's torch, or MLP weights, registered for a task with
// one command (no hand-written manifest), then rolled out, evaluated, ranked and promoted like
// any checkpoint; bad input refused naming it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/train/policy_test_files.h"
#include "tests/util/subprocess.h"

namespace roboloop {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::ProgramResult;

class CliPolicyFileTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(testing::MakeTempDir("cli-policy-file"));
    train::testing::ExportPythonPolicies(*dir_);
    ASSERT_EQ(std::system(("mkdir -p " + *dir_ + "/protocols").c_str()), 0);
    std::ofstream(*dir_ + "/protocols/gate.yaml")
        << "task: cartpole-balance\nseed_start: 5000\nepisodes: 3\nmax_steps: 12\n"
           "execution: {chunk: {mode: FULL_CHUNK}}\n";
  }

  void SetUp() override { root_ = testing::MakeTempDir("cli-policy-file-store"); }

  ProgramResult Roboloop(std::vector<std::string> args) {
    args.insert(args.end(), {"--root", root_});
    return testing::RunRoboloop(args);
  }

  static std::string File(const std::string& name) { return *dir_ + "/" + name; }

  static std::string WriteFile(const std::string& name, const std::string& text) {
    std::ofstream(File(name)) << text;
    return File(name);
  }

  // The id `registry put` printed ("" when none).
  static std::string RegisteredId(const std::string& out) {
    std::smatch match;
    return std::regex_search(out, match, std::regex("registered checkpoint \\S+ ([0-9a-f]{64})")) ? match[1].str()
                                                                                                    : "";
  }

  // The state hash chains of a `sim rollout --format json` output.
  static std::set<std::string> HashChains(const std::string& out) {
    std::set<std::string> found;
    const std::regex chain("\"state_hash_chain\":\"([0-9a-f]{16})\"");
    for (auto it = std::sregex_iterator(out.begin(), out.end(), chain); it != std::sregex_iterator(); ++it) {
      found.insert((*it)[1].str());
    }
    return found;
  }

  ProgramResult RollOut(const std::string& ref) {
    return Roboloop({"sim", "rollout", "--task", "cartpole-balance", "--policy", ref, "--episodes", "2",
                     "--max-steps", "10", "--format", "json"});
  }

  static std::string* dir_;
  std::string root_;
};

std::string* CliPolicyFileTest::dir_ = nullptr;

TEST_F(CliPolicyFileTest, ATorchScriptFileIsRegisteredRolledOutEvaluatedRankedAndPromoted) {
  ProgramResult put = Roboloop({"registry", "put", "--model", "scripted", "--policy-file", File("cartpole.pt"),
                                "--task", "cartpole-balance"});
  ASSERT_EQ(put.exit_code, 0) << put.err;
  const std::string id = RegisteredId(put.out);
  ASSERT_FALSE(id.empty()) << put.out;
  ProgramResult show = Roboloop({"registry", "show", "scripted:v1"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  const nlohmann::json manifest = nlohmann::json::parse(nlohmann::json::parse(show.out)["manifest_json"].get<std::string>());
  EXPECT_EQ(manifest["policy"]["kind"], "torchscript");
  EXPECT_EQ(manifest["obs_spec"]["names"].size(), 2u) << manifest.dump();
  EXPECT_EQ(manifest["action_spec"]["shapes"], nlohmann::json::parse("[[1]]"));
  EXPECT_EQ(manifest["normalization"], nlohmann::json::object());

  ProgramResult rollout = RollOut("scripted@latest");
  ASSERT_EQ(rollout.exit_code, 0) << rollout.err;
  EXPECT_EQ(HashChains(rollout.out).size(), 2u) << rollout.out;
  ProgramResult eval = Roboloop({"eval", "scripted@latest", "--task", "cartpole-balance", "--episodes", "3",
                                 "--max-steps", "12", "--protocols-dir", File("protocols")});
  ASSERT_EQ(eval.exit_code, 0) << eval.out << eval.err;
  EXPECT_THAT(eval.out, HasSubstr(id));
  ProgramResult board = Roboloop({"leaderboard", "--task", "cartpole-balance", "--format", "json"});
  ASSERT_EQ(board.exit_code, 0) << board.err;
  EXPECT_THAT(board.out, HasSubstr(id));
  ProgramResult promoted = Roboloop({"promote", "scripted", "--protocol", "gate", "--protocols-dir", File("protocols")});
  ASSERT_EQ(promoted.exit_code, 0) << promoted.out << promoted.err;
  EXPECT_THAT(promoted.out, HasSubstr("promoted scripted@champion"));
  ProgramResult champion = Roboloop({"registry", "show", "scripted@champion"});
  EXPECT_THAT(champion.out, HasSubstr(id));
}

TEST_F(CliPolicyFileTest, AGivenNormalizationIsStoredAndChangesWhatTheTorchScriptPolicyDoes) {
  const std::string stats = WriteFile("stats.json", R"({"obs": {"mean": [0.5, 0, 0, 0, 0], "std": [3, 3, 3, 3, 3]},
    "action": {"mean": [0.25], "std": [4]}})");
  ASSERT_EQ(Roboloop({"registry", "put", "--model", "plain", "--policy-file", File("cartpole.pt"), "--task",
                      "cartpole-balance"}).exit_code, 0);
  ProgramResult put = Roboloop({"registry", "put", "--model", "normalized", "--policy-file", File("cartpole.pt"),
                                "--task", "cartpole-balance", "--normalization", stats});
  ASSERT_EQ(put.exit_code, 0) << put.err;
  ProgramResult show = Roboloop({"registry", "show", "normalized:v1"});
  EXPECT_THAT(show.out, HasSubstr("0.25"));
  ProgramResult plain = RollOut("plain@latest");
  ProgramResult normalized = RollOut("normalized@latest");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(normalized.exit_code, 0) << normalized.err;
  EXPECT_NE(HashChains(plain.out), HashChains(normalized.out));
}

TEST_F(CliPolicyFileTest, MlpWeightsAreRegisteredWithTheirOptionsAndRollOut) {
  const std::string weights = File("mlp.safetensors");
  train::testing::WriteMlp(weights, {5, 8, 1}, 4);
  ProgramResult no_kind = Roboloop({"registry", "put", "--model", "m", "--policy-file", weights, "--task",
                                    "cartpole-balance"});
  EXPECT_EQ(no_kind.exit_code, 1);
  EXPECT_THAT(no_kind.err, AllOf(HasSubstr(weights), HasSubstr("--kind"), HasSubstr("mlp (.safetensors)"),
                                 HasSubstr("torchscript (.pt)")));
  ProgramResult wrong_options = Roboloop({"registry", "put", "--model", "m", "--policy-file", weights, "--kind",
                                          "mlp", "--task", "cartpole-balance"});
  EXPECT_EQ(wrong_options.exit_code, 1);
  EXPECT_THAT(wrong_options.err, HasSubstr(weights));
  ProgramResult put = Roboloop({"registry", "put", "--model", "m", "--policy-file", weights, "--kind", "mlp",
                                "--options", R"({"hidden": [8], "activation": "tanh"})", "--task",
                                "cartpole-balance"});
  ASSERT_EQ(put.exit_code, 0) << put.err;
  ProgramResult rollout = RollOut("m@latest");
  ASSERT_EQ(rollout.exit_code, 0) << rollout.err;
  EXPECT_EQ(HashChains(rollout.out).size(), 2u) << rollout.out;
}

TEST_F(CliPolicyFileTest, BadInputIsRefusedNamingIt) {
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::vector<std::string> messages;
  };
  const std::string pt = File("cartpole.pt");
  const std::string short_stats =
      WriteFile("short.json", R"({"obs": {"mean": [0, 0, 0], "std": [1, 1, 1]}, "action": {"mean": [0], "std": [1]}})");
  const std::vector<Case> cases = {
      {{"--policy-file", pt}, 2, {"--task"}},
      {{"--policy-file", pt, "--task", "cartpole-balance", "--manifest", pt}, 2, {"exactly one of"}},
      {{"--policy-file", pt, "--task", "no-such-task"}, 1, {"no-such-task"}},
      {{"--policy-file", pt, "--task", "reacher"}, 1, {pt, "does not fit the task"}},
      {{"--policy-file", File("traced.pt"), "--task", "cartpole-balance"}, 1, {"traced.pt", "does not fit the task"}},
      {{"--policy-file", File("nope.pt"), "--task", "cartpole-balance"}, 1, {"nope.pt"}},
      {{"--policy-file", File("nan.pt"), "--task", "cartpole-balance"},
       1,
       {"nan.pt", "predicts a non-finite action (action[0] = nan) for a zero observation"}},
      {{"--policy-file", pt, "--task", "cartpole-balance", "--kind", "lstm"}, 1, {"unknown policy kind 'lstm'"}},
      {{"--policy-file", pt, "--task", "cartpole-balance", "--options", "{"}, 2, {"--options"}},
      {{"--policy-file", pt, "--task", "cartpole-balance", "--normalization", short_stats},
       1,
       {short_stats, "obs.mean holds 3 numbers, the task has 5"}},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"registry", "put", "--model", "bad"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    ProgramResult result = Roboloop(args);
    EXPECT_EQ(result.exit_code, c.exit_code) << c.messages[0] << ": " << result.err;
    for (const std::string& message : c.messages) EXPECT_THAT(result.err, HasSubstr(message));
  }
  ProgramResult ls = Roboloop({"registry", "ls", "--format", "json"});
  EXPECT_THAT(ls.out, ::testing::Not(HasSubstr("\"bad\"")));
}

}  // namespace
}  // namespace roboloop
