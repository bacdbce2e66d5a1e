// `roboloop leaderboard` and `roboloop compare` driven as a user would: a store seeded
// through the library, the real binary, exit codes and output.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "eval/leaderboard_store.h"
#include "tests/eval/test_evaluations.h"
#include "tests/util/subprocess.h"

namespace roboloop::eval {
namespace {

using ::testing::HasSubstr;
using roboloop::testing::ProgramResult;

constexpr int64_t kJan1 = 1767225600LL * 1000000LL;  // 2026-01-01T00:00:00Z

class CliEvalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = roboloop::testing::MakeTempDir("cli-eval");
    root_ = dir_ + "/store";
    protocols_ = dir_ + "/protocols";
    std::string mkdir = "mkdir -p " + protocols_;
    ASSERT_EQ(std::system(mkdir.c_str()), 0);
    std::ofstream(protocols_ + "/reach-gate.yaml")
        << "task: reacher\nseed_start: 1000\nepisodes: 40\nmax_steps: 100\n"
           "execution: {chunk: {mode: FULL_CHUNK}}\n";
    auto loaded = LoadProtocol("reach-gate", protocols_);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    protocol_ = *loaded;
  }

  void Seed(const std::vector<v1::Evaluation>& evaluations) {
    LeaderboardStore::Options options;
    options.root = root_;
    auto store = LeaderboardStore::Create(options);
    ASSERT_TRUE(store.ok()) << store.status();
    for (const v1::Evaluation& e : evaluations) ASSERT_TRUE((*store)->Store(e).ok());
  }

  ProgramResult Roboloop(std::vector<std::string> args) {
    std::vector<std::string> argv = {roboloop::testing::RoboloopBinary()};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--root", root_, "--protocols-dir", protocols_});
    return roboloop::testing::RunProgram(argv);
  }

  std::string dir_, root_, protocols_;
  v1::Protocol protocol_;
};

TEST_F(CliEvalTest, LeaderboardTableJsonAndCsv) {
  v1::Evaluation good = testing::MakeEvaluation(protocol_, "ckpt-good-0001", "reach", 2, 33, 0, kJan1);
  v1::Evaluation weak = testing::MakeEvaluation(protocol_, "ckpt-weak-0001", "reach", 1, 12, 0, kJan1);
  v1::Evaluation other = testing::MakeEvaluation(testing::MakeProtocol("cartpole-swingup", 10), "ckpt-cart",
                                                 "cart", 1, 9, 0, kJan1);
  Seed({good, weak, other});

  ProgramResult table = Roboloop({"leaderboard", "--task", "reacher"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("0.82 [0.68, 0.91]"));  // 33/40, Wilson 95 %
  EXPECT_THAT(table.out, HasSubstr("reach:v2"));
  EXPECT_THAT(table.out, ::testing::Not(HasSubstr("ckpt-cart")));
  EXPECT_LT(table.out.find("ckpt-good"), table.out.find("ckpt-weak"));

  ProgramResult json = Roboloop({"leaderboard", "--protocol", "reach-gate", "--top", "1", "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  nlohmann::json parsed = nlohmann::json::parse(json.out);
  ASSERT_EQ(parsed["evaluations"].size(), 1u);
  EXPECT_EQ(parsed["evaluations"][0]["id"], good.id());

  ProgramResult csv = Roboloop({"leaderboard", "--model", "cart", "--format", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_THAT(csv.out, HasSubstr("rank,evaluation_id,model"));
  EXPECT_THAT(csv.out, HasSubstr("1," + other.id() + ",cart,1,ckpt-cart,cartpole-swingup"));
}

TEST_F(CliEvalTest, CompareByCheckpointAndEvaluationId) {
  v1::Evaluation candidate = testing::MakeEvaluation(protocol_, "ckpt-new", "reach", 2, 30, 0, kJan1);
  v1::Evaluation baseline = testing::MakeEvaluation(protocol_, "ckpt-old", "reach", 1, 15, 0, kJan1);
  Seed({candidate, baseline});

  ProgramResult better = Roboloop({"compare", "ckpt-new", baseline.id(), "--protocol", "reach-gate"});
  ASSERT_EQ(better.exit_code, 0) << better.err;
  EXPECT_THAT(better.out, HasSubstr("candidate only 15, baseline only 0"));
  EXPECT_THAT(better.out, HasSubstr("verdict    better"));
  EXPECT_THAT(better.out, HasSubstr("p = 6.104e-05"));  // 2 * 0.5^15

  ProgramResult worse = Roboloop({"compare", "ckpt-old", "ckpt-new", "--protocol", ProtocolHash(protocol_),
                                  "--format", "json"});
  ASSERT_EQ(worse.exit_code, 0) << worse.err;
  nlohmann::json parsed = nlohmann::json::parse(worse.out);
  EXPECT_EQ(parsed["verdict"], "VERDICT_WORSE");
  EXPECT_EQ(parsed["candidate_evaluation_id"], baseline.id());
}

TEST_F(CliEvalTest, CompareErrorsNameTheProblem) {
  v1::Evaluation candidate = testing::MakeEvaluation(protocol_, "ckpt-new", "reach", 2, 30, 0, kJan1);
  v1::Evaluation elsewhere = testing::MakeEvaluation(testing::MakeProtocol("reacher", 40, 5000), "ckpt-x",
                                                     "reach", 1, 15, 0, kJan1);
  Seed({candidate, elsewhere});
  ProgramResult unknown = Roboloop({"compare", "ckpt-new", "ckpt-missing", "--protocol", "reach-gate"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("'ckpt-missing' is neither an evaluation id nor a checkpoint"));

  ProgramResult other_protocol = Roboloop({"compare", "ckpt-new", elsewhere.id(), "--protocol", "reach-gate"});
  EXPECT_EQ(other_protocol.exit_code, 1);
  EXPECT_THAT(other_protocol.err, HasSubstr("comparable only under one protocol"));

  ProgramResult no_protocol = Roboloop({"compare", "ckpt-new", "ckpt-x", "--protocol", "nope"});
  EXPECT_EQ(no_protocol.exit_code, 1);
  EXPECT_THAT(no_protocol.err, HasSubstr("protocol 'nope' not found"));
  EXPECT_THAT(no_protocol.err, HasSubstr("reach-gate"));
}

TEST_F(CliEvalTest, LeaderboardWithoutStoreOrWithBadFlags) {
  ProgramResult empty = Roboloop({"leaderboard"});
  EXPECT_EQ(empty.exit_code, 1);
  EXPECT_THAT(empty.err, HasSubstr("no leaderboard database at"));
  Seed({});
  EXPECT_THAT(Roboloop({"leaderboard"}).out, HasSubstr("no completed evaluations match"));
  ProgramResult bad_metric = Roboloop({"leaderboard", "--metric", "speed"});
  EXPECT_EQ(bad_metric.exit_code, 2);
  EXPECT_THAT(bad_metric.err, HasSubstr("unknown leaderboard metric 'speed'"));
  EXPECT_EQ(Roboloop({"leaderboard", "--top", "0"}).exit_code, 2);
  EXPECT_EQ(Roboloop({"leaderboard", "--since", "yesterday"}).exit_code, 2);
}

}  // namespace
}  // namespace roboloop::eval
