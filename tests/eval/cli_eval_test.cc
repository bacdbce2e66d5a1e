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
    args.insert(args.end(), {"--root", root_, "--protocols-dir", protocols_});
    return roboloop::testing::RunRoboloop(args);
  }

  // Registers checkpoint reach:v<next> (an mlp manifest on reacher's specs, a stand-in policy blob: nothing
  // here runs it) and sets `*id` to its id unless `id` is null.
  void PutCheckpoint(std::string* id) {
    std::ofstream(dir_ + "/manifest.json") << R"({"format_version": 1, "model": "x",
        "policy": {"kind": "mlp", "options": {}}, "obs_spec": {"names": ["qpos"], "shapes": [[4]]},
        "action_spec": {"names": ["force"], "shapes": [[1]]}, "normalization": {},
        "action_chunk": {"horizon": 1, "execution": "receding"}, "dataset_id": "", "parent_id": "", "step": 10,
        "metrics": {}, "blobs": {}, "provenance": {}})";
    std::ofstream(dir_ + "/policy.bin") << "weights";
    ProgramResult put = roboloop::testing::RunRoboloop({"registry", "put", "--model", "reach", "--manifest",
                                                        dir_ + "/manifest.json", "--blob",
                                                        "policy=" + dir_ + "/policy.bin", "--root", root_});
    ASSERT_EQ(put.exit_code, 0) << put.err;
    if (id != nullptr) *id = put.out.substr(put.out.rfind(' ') + 1, 64);
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

TEST_F(CliEvalTest, CsvQuotesAFieldHoldingACarriageReturn) {
  // QA: a protocol named "g\rX" came out unquoted and csv readers broke the row there.
  v1::Protocol named = protocol_;
  named.set_name("g\rX");
  Seed({testing::MakeEvaluation(named, "ckpt-cr", "reach", 1, 20, 0, kJan1)});
  ProgramResult csv = Roboloop({"leaderboard", "--format", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_THAT(csv.out, HasSubstr(",reacher,\"g\rX\","));
}

// QA: JSON left out every zero (a 0 % policy had no "rate", an empty leaderboard printed {}, a
// comparison without baseline-only successes no "baseline_only"), so scripts met missing keys.
TEST_F(CliEvalTest, JsonPrintsZerosAndEmptyLists) {
  Seed({});
  ProgramResult empty = Roboloop({"leaderboard", "--format", "json"});
  ASSERT_EQ(empty.exit_code, 0) << empty.err;
  EXPECT_EQ(nlohmann::json::parse(empty.out)["evaluations"], nlohmann::json::array());

  v1::Evaluation failing = testing::MakeEvaluation(protocol_, "ckpt-zero", "reach", 1, 0, 0, kJan1);
  v1::Evaluation better = testing::MakeEvaluation(protocol_, "ckpt-some", "reach", 2, 10, 0, kJan1);
  Seed({failing, better});
  ProgramResult rows = Roboloop({"leaderboard", "--format", "json"});
  ASSERT_EQ(rows.exit_code, 0) << rows.err;
  const nlohmann::json zero = nlohmann::json::parse(rows.out)["evaluations"][1]["aggregates"]["success"];
  EXPECT_EQ(zero["rate"], 0);
  EXPECT_EQ(zero["successes"], "0");
  EXPECT_EQ(zero["interval"]["low"], 0);

  ProgramResult compare =
      Roboloop({"compare", better.id(), failing.id(), "--protocol", "reach-gate", "--format", "json"});
  ASSERT_EQ(compare.exit_code, 0) << compare.err;
  const nlohmann::json comparison = nlohmann::json::parse(compare.out);
  EXPECT_EQ(comparison["baseline_only"], "0");
  EXPECT_EQ(comparison["both_succeeded"], "0");
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

// An unknown --format names the accepted ones, as the other commands do (not CLI11's enum numbers).
TEST_F(CliEvalTest, AnUnknownFormatIsAUsageErrorNamingTheFormats) {
  Seed({testing::MakeEvaluation(protocol_, "ckpt-good-0001", "reach", 2, 33, 0, kJan1)});
  for (const std::string command : {"leaderboard", "compare"}) {
    std::vector<std::string> args = {command};
    if (command == "compare") args.insert(args.end(), {"a", "b", "--protocol", "reach-gate"});
    args.insert(args.end(), {"--format", "xml"});
    ProgramResult result = Roboloop(args);
    EXPECT_EQ(result.exit_code, 2) << command;
    EXPECT_THAT(result.err, HasSubstr("--format: xml not in {table,json")) << command << result.err;
    EXPECT_THAT(result.err, ::testing::Not(HasSubstr("->"))) << command << result.err;
  }
  ProgramResult help = Roboloop({"leaderboard", "--help"});
  EXPECT_THAT(help.out, HasSubstr("TEXT:{table,json,csv}"));
  ProgramResult csv = Roboloop({"leaderboard", "--format", "CSV"});
  EXPECT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_THAT(csv.out, HasSubstr("rank,evaluation_id"));
}

// An evaluation stores its protocol with the task's definition pinned (EvalService pins it before
// hashing); a protocol file that pins nothing still names those evaluations, by name or path.
TEST_F(CliEvalTest, ProtocolNameAndFileFindEvaluationsStoredUnderThePinnedTaskDefinition) {
  v1::Protocol pinned = protocol_;
  pinned.set_task_definition_hash(std::string(64, 'a'));
  v1::Evaluation candidate = testing::MakeEvaluation(pinned, "ckpt-new", "reach", 2, 30, 0, kJan1);
  v1::Evaluation baseline = testing::MakeEvaluation(pinned, "ckpt-old", "reach", 1, 15, 0, kJan1);
  Seed({candidate, baseline});

  for (const std::string& protocol : {std::string("reach-gate"), protocols_ + "/reach-gate.yaml"}) {
    ProgramResult board = Roboloop({"leaderboard", "--protocol", protocol});
    ASSERT_EQ(board.exit_code, 0) << board.err;
    EXPECT_THAT(board.out, HasSubstr("reach:v2")) << protocol;
    ProgramResult compared = Roboloop({"compare", "ckpt-new", "ckpt-old", "--protocol", protocol});
    ASSERT_EQ(compared.exit_code, 0) << compared.err;
    EXPECT_THAT(compared.out, HasSubstr("verdict    better")) << protocol;
  }

  v1::Protocol redefined = protocol_;
  redefined.set_task_definition_hash(std::string(64, 'b'));
  Seed({testing::MakeEvaluation(redefined, "ckpt-new", "reach", 2, 30, 0, kJan1)});
  ProgramResult ambiguous = Roboloop({"leaderboard", "--protocol", "reach-gate"});
  EXPECT_EQ(ambiguous.exit_code, 1);
  EXPECT_THAT(ambiguous.err, HasSubstr("was evaluated under 2 definitions of task 'reacher'"));
  EXPECT_THAT(ambiguous.err, HasSubstr(ProtocolHash(redefined)));
}

TEST_F(CliEvalTest, CompareErrorsNameTheProblem) {
  v1::Evaluation candidate = testing::MakeEvaluation(protocol_, "ckpt-new", "reach", 2, 30, 0, kJan1);
  v1::Evaluation elsewhere = testing::MakeEvaluation(testing::MakeProtocol("reacher", 40, 5000), "ckpt-x",
                                                     "reach", 1, 15, 0, kJan1);
  Seed({candidate, elsewhere});
  ProgramResult unknown = Roboloop({"compare", "ckpt-new", "ckpt-missing", "--protocol", "reach-gate"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("'ckpt-missing' is neither an evaluation id (or a unique prefix of one) nor a "
                                     "checkpoint"));

  ProgramResult other_protocol = Roboloop({"compare", "ckpt-new", elsewhere.id(), "--protocol", "reach-gate"});
  EXPECT_EQ(other_protocol.exit_code, 1);
  EXPECT_THAT(other_protocol.err, HasSubstr("comparable only under one protocol"));

  ProgramResult no_protocol = Roboloop({"compare", "ckpt-new", "ckpt-x", "--protocol", "nope"});
  EXPECT_EQ(no_protocol.exit_code, 1);
  EXPECT_THAT(no_protocol.err, HasSubstr("protocol 'nope' not found"));
  EXPECT_THAT(no_protocol.err, HasSubstr("reach-gate"));
}

TEST_F(CliEvalTest, CompareTakesUniqueEvaluationIdPrefixesAndListsTheCandidatesOfAnAmbiguousOne) {
  v1::Evaluation candidate = testing::MakeEvaluation(protocol_, "ckpt-new", "reach", 2, 30, 0, kJan1);
  v1::Evaluation baseline = testing::MakeEvaluation(protocol_, "ckpt-old", "reach", 1, 15, 0, kJan1);
  v1::Evaluation sibling = testing::MakeEvaluation(protocol_, "ckpt-third", "reach", 3, 20, 0, kJan1);
  candidate.set_id("5eed0001-aaaa-4aaa-8aaa-000000000001");
  sibling.set_id("5eed0001-cccc-4ccc-8ccc-000000000003");
  baseline.set_id("7a1e0002-bbbb-4bbb-8bbb-000000000002");
  Seed({candidate, baseline, sibling});

  ProgramResult by_prefix =
      Roboloop({"compare", "5eed0001-a", "7a1e00", "--protocol", "reach-gate", "--format", "json"});
  ASSERT_EQ(by_prefix.exit_code, 0) << by_prefix.err;
  const nlohmann::json parsed = nlohmann::json::parse(by_prefix.out);
  EXPECT_EQ(parsed["candidate_evaluation_id"], candidate.id());
  EXPECT_EQ(parsed["baseline_evaluation_id"], baseline.id());
  EXPECT_EQ(parsed["verdict"], "VERDICT_BETTER");

  ProgramResult ambiguous = Roboloop({"compare", "5eed0001", "7a1e00", "--protocol", "reach-gate"});
  EXPECT_EQ(ambiguous.exit_code, 1);
  EXPECT_THAT(ambiguous.err, HasSubstr("evaluation id prefix 5eed0001 is ambiguous; candidates: " + candidate.id() +
                                       ", " + sibling.id()));
  ProgramResult too_short = Roboloop({"compare", "5eed0001-a", "7a1e0", "--protocol", "reach-gate"});
  EXPECT_EQ(too_short.exit_code, 1);
  EXPECT_THAT(too_short.err, HasSubstr("'7a1e0' is neither an evaluation id (or a unique prefix of one)"));
}

// A prefix of an evaluation id that is also a prefix of a registered checkpoint's id names
// neither: the error names both; one more character (a UUID's dash) settles it.
TEST_F(CliEvalTest, APrefixOfBothAnEvaluationAndACheckpointIsAmbiguous) {
  std::string checkpoint_id;
  ASSERT_NO_FATAL_FAILURE(PutCheckpoint(&checkpoint_id));
  v1::Evaluation candidate = testing::MakeEvaluation(protocol_, checkpoint_id, "reach", 1, 30, 0, kJan1);
  v1::Evaluation baseline = testing::MakeEvaluation(protocol_, "ckpt-old", "reach", 2, 15, 0, kJan1);
  const std::string prefix = checkpoint_id.substr(0, 8);
  candidate.set_id(prefix + "-0000-4000-8000-000000000001");
  Seed({candidate, baseline});

  ProgramResult ambiguous = Roboloop({"compare", prefix, baseline.id(), "--protocol", "reach-gate"});
  EXPECT_EQ(ambiguous.exit_code, 1);
  EXPECT_THAT(ambiguous.err, HasSubstr("'" + prefix + "' is ambiguous: evaluation " +
                                       candidate.id() + " and checkpoint " + checkpoint_id));
  ProgramResult settled = Roboloop({"compare", prefix + "-", baseline.id(), "--protocol",
                                    "reach-gate", "--format", "json"});
  ASSERT_EQ(settled.exit_code, 0) << settled.err;
  EXPECT_EQ(nlohmann::json::parse(settled.out)["candidate_evaluation_id"], candidate.id());
}

// QA: `compare cb:v2 …` named the checkpoint by its resolved id and the protocol by its hash only.
TEST_F(CliEvalTest, ACheckpointWithoutAnEvaluationIsNamedAsTheUserWroteIt) {
  ASSERT_NO_FATAL_FAILURE(PutCheckpoint(nullptr));
  v1::Evaluation baseline = testing::MakeEvaluation(protocol_, "ckpt-old", "reach", 2, 15, 0, kJan1);
  Seed({baseline});
  ProgramResult missing = Roboloop({"compare", "reach:v1", baseline.id(), "--protocol", "reach-gate"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("checkpoint 'reach:v1' ("));
  EXPECT_THAT(missing.err, HasSubstr("has no completed evaluation under --protocol 'reach-gate' ("));
  EXPECT_THAT(missing.err, HasSubstr("run `roboloop eval reach:v1 --protocol reach-gate` first"));
}

TEST_F(CliEvalTest, ProtocolHashPrefixesAndStoredNamesAreAccepted) {
  const v1::Protocol early = testing::MakeProtocol("reacher", 40, 5000);
  const v1::Protocol late = testing::MakeProtocol("reacher", 40, 6000);  // same name, other hash
  Seed({testing::MakeEvaluation(protocol_, "ckpt-new", "reach", 2, 30, 0, kJan1),
        testing::MakeEvaluation(protocol_, "ckpt-old", "reach", 1, 15, 0, kJan1),
        testing::MakeEvaluation(early, "ckpt-early", "reach", 3, 5, 0, kJan1),
        testing::MakeEvaluation(late, "ckpt-late", "reach", 4, 5, 0, kJan1)});
  const std::string hash = ProtocolHash(protocol_);
  for (size_t length : {6, 8, 12}) {
    ProgramResult board = Roboloop({"leaderboard", "--protocol", hash.substr(0, length)});
    EXPECT_EQ(board.exit_code, 0) << length << ": " << board.err;
    EXPECT_THAT(board.out, HasSubstr("ckpt-new")) << length;
    EXPECT_THAT(board.out, ::testing::Not(HasSubstr("ckpt-early"))) << length;
  }
  ProgramResult compare = Roboloop({"compare", "ckpt-new", "ckpt-old", "--protocol", hash.substr(0, 8)});
  EXPECT_EQ(compare.exit_code, 0) << compare.err;
  EXPECT_THAT(compare.out, HasSubstr("verdict    better"));

  ProgramResult by_name = Roboloop({"leaderboard", "--protocol", "reacher-test"});
  EXPECT_EQ(by_name.exit_code, 1);
  EXPECT_THAT(by_name.err, HasSubstr("'reacher-test' is ambiguous"));
  EXPECT_THAT(by_name.err, HasSubstr(ProtocolHash(early) + " (reacher-test)"));
  EXPECT_THAT(by_name.err, HasSubstr(ProtocolHash(late) + " (reacher-test)"));
  ProgramResult too_short = Roboloop({"leaderboard", "--protocol", hash.substr(0, 5)});
  EXPECT_EQ(too_short.exit_code, 1);
  EXPECT_THAT(too_short.err, HasSubstr("is neither a protocol hash"));
}

TEST_F(CliEvalTest, CompareAndPromoteRefuseBadAlphaAndTooFewResamples) {
  Seed({testing::MakeEvaluation(protocol_, "ckpt-new", "reach", 2, 30, 0, kJan1),
        testing::MakeEvaluation(protocol_, "ckpt-old", "reach", 1, 15, 0, kJan1)});
  const std::vector<std::string> compare = {"compare", "ckpt-new", "ckpt-old", "--protocol", "reach-gate"};
  for (const char* alpha : {"nan", "inf", "-1", "0", "1", "1e-9"}) {
    std::vector<std::string> args = compare;
    args.insert(args.end(), {"--alpha", alpha});
    ProgramResult result = Roboloop(args);
    EXPECT_EQ(result.exit_code, 2) << alpha << ": " << result.err;
    EXPECT_THAT(result.err, HasSubstr("--alpha: alpha must be in [0.0001, 1)")) << alpha;
    ProgramResult promote = Roboloop({"promote", "reach", "--protocol", "reach-gate", "--alpha", alpha});
    EXPECT_EQ(promote.exit_code, 2) << alpha << ": " << promote.err;
    EXPECT_THAT(promote.err, HasSubstr("--alpha: alpha must be in [0.0001, 1)")) << alpha;
  }
  for (const char* resamples : {"1", "3", "999"}) {
    std::vector<std::string> args = compare;
    args.insert(args.end(), {"--resamples", resamples});
    ProgramResult result = Roboloop(args);
    EXPECT_EQ(result.exit_code, 2) << resamples << ": " << result.err;
    EXPECT_THAT(result.err, HasSubstr("--resamples must be >= 1000 at --alpha 0.05")) << resamples;
  }
  ProgramResult strict = Roboloop({"compare", "ckpt-new", "ckpt-old", "--protocol", "reach-gate", "--alpha", "0.0005"});
  EXPECT_EQ(strict.exit_code, 2) << strict.err;
  EXPECT_THAT(strict.err, HasSubstr("--resamples must be >= 20000"));
  EXPECT_EQ(Roboloop({"compare", "ckpt-new", "ckpt-old", "--protocol", "reach-gate", "--resamples", "1000"}).exit_code,
            0);
  ProgramResult negative_seed = Roboloop({"compare", "ckpt-new", "ckpt-old", "--protocol", "reach-gate", "--seed", "-1"});
  EXPECT_EQ(negative_seed.exit_code, 2) << negative_seed.err;
  EXPECT_THAT(negative_seed.err, HasSubstr("--seed"));
  ProgramResult eval_seed = Roboloop({"eval", "reach:v1", "--task", "reacher", "--seed", "-1"});
  EXPECT_EQ(eval_seed.exit_code, 2) << eval_seed.err;
  EXPECT_THAT(eval_seed.err, HasSubstr("--seed"));
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
