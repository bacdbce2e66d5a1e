#include "eval/protocol.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "common/sha256.h"
#include "tests/util/subprocess.h"

namespace roboloop::eval {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::vector<std::string> kTasks = {"cartpole-swingup", "reacher"};

std::string WriteYaml(const std::string& dir, const std::string& name, const std::string& text) {
  std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

constexpr char kProtocol[] = R"(task: reacher
seed_start: 100
episodes: 20
max_steps: 200
robustness:
  obs_noise_std: {qpos: 0.01, qvel: 0.02}
  body_mass: {low: 0.9, high: 1.1}
execution:
  chunk: {mode: RECEDING_HORIZON, receding_steps: 4}
)";

// The same protocol with keys in another order, another name and other formatting.
constexpr char kReordered[] = R"(name: another-name
description: same protocol, other words
execution:
  batch_invariant: true
  chunk:
    receding_steps: 4
    mode: RECEDING_HORIZON
max_steps: 200
robustness:
  body_mass:
    high: 1.1
    low: 0.9
  obs_noise_std:
    qvel: 0.02
    qpos: 0.01
episodes: 20
seed_start: 100
task: reacher
)";

class ProtocolTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::MakeTempDir("protocol"); }
  std::string dir_;
};

TEST_F(ProtocolTest, LoadsByNameAndSetsNameFromFile) {
  WriteYaml(dir_, "reach.yaml", kProtocol);
  auto protocol = LoadProtocol("reach", dir_);
  ASSERT_TRUE(protocol.ok()) << protocol.status();
  EXPECT_EQ(protocol->name(), "reach");
  EXPECT_EQ(protocol->episodes(), 20);
  EXPECT_EQ(protocol->execution().chunk().mode(), v1::ChunkExecution::RECEDING_HORIZON);
  EXPECT_TRUE(BatchInvariant(*protocol));
  EXPECT_TRUE(ValidateProtocol(*protocol, kTasks).ok());
}

TEST_F(ProtocolTest, AServiceTakesOnlyNamesAndAClientSendsAFileInline) {
  const std::string path = WriteYaml(dir_, "reach.yaml", kProtocol);
  EXPECT_TRUE(CheckServedProtocolName("reach").ok());
  for (const std::string& name : {path, std::string("reach.yaml"), std::string("../reach")}) {
    const absl::Status refused = CheckServedProtocolName(name);
    EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_THAT(refused.message(), ::testing::HasSubstr("'" + name + "' is a file path"));
  }
  EXPECT_EQ(CheckServedProtocolName(std::string("reach\0x", 7)).code(), absl::StatusCode::kInvalidArgument);

  v1::EvaluateRequest named;
  ASSERT_TRUE(SetRequestProtocol("reach", &named).ok());
  EXPECT_EQ(named.protocol_name(), "reach");
  v1::PromoteCandidateRequest from_file;
  ASSERT_TRUE(SetRequestProtocol(path, &from_file).ok());
  ASSERT_TRUE(from_file.has_protocol());
  EXPECT_EQ(from_file.protocol().name(), "reach");
  EXPECT_EQ(ProtocolHash(from_file.protocol()), ProtocolHash(*LoadProtocol(path)));
  EXPECT_EQ(SetRequestProtocol(dir_ + "/absent.yaml", &named).code(), absl::StatusCode::kNotFound);
}

TEST_F(ProtocolTest, HashIgnoresKeyOrderNameAndExplicitDefaults) {
  auto a = LoadProtocol(WriteYaml(dir_, "a.yaml", kProtocol));
  auto b = LoadProtocol(WriteYaml(dir_, "b.yaml", kReordered));
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  EXPECT_EQ(CanonicalProtocolJson(*a), CanonicalProtocolJson(*b));
  EXPECT_EQ(ProtocolHash(*a), ProtocolHash(*b));
  EXPECT_TRUE(IsSha256Hex(ProtocolHash(*a)));
  EXPECT_EQ(ProtocolHash(*a),
            Sha256Hex("roboloop.eval.protocol.v1\n" + CanonicalProtocolJson(*a)));
  EXPECT_THAT(CanonicalProtocolJson(*a), Not(HasSubstr("name")));
}

TEST_F(ProtocolTest, HashChangesWithEveryMeaningfulField) {
  auto base = LoadProtocol(WriteYaml(dir_, "a.yaml", kProtocol));
  ASSERT_TRUE(base.ok());
  const std::string hash = ProtocolHash(*base);
  auto changed = [&](auto mutate) {
    v1::Protocol copy = *base;
    mutate(&copy);
    return ProtocolHash(copy);
  };
  EXPECT_NE(hash, changed([](v1::Protocol* p) { p->set_episodes(21); }));
  EXPECT_NE(hash, changed([](v1::Protocol* p) { p->set_seed_start(101); }));
  EXPECT_NE(hash, changed([](v1::Protocol* p) { p->set_base_seed(1); }));
  EXPECT_NE(hash, changed([](v1::Protocol* p) { p->set_task_definition_hash("abc"); }));
  EXPECT_NE(hash, changed([](v1::Protocol* p) { p->mutable_robustness()->set_action_delay(1); }));
  EXPECT_NE(hash, changed([](v1::Protocol* p) { p->mutable_execution()->set_batch_invariant(false); }));
  EXPECT_EQ(hash, changed([](v1::Protocol* p) { p->set_name("x"); }));
}

TEST_F(ProtocolTest, ParseErrorsNameFileAndLine) {
  std::string path = WriteYaml(dir_, "bad.yaml", "task: reacher\nepisodes: 20\nepisodez: 3\n");
  auto protocol = LoadProtocol(path);
  ASSERT_FALSE(protocol.ok());
  EXPECT_THAT(protocol.status().message(), HasSubstr("bad.yaml:3"));
}

TEST_F(ProtocolTest, UnknownNameListsKnownProtocols) {
  WriteYaml(dir_, "reach.yaml", kProtocol);
  auto protocol = LoadProtocol("missing", dir_);
  ASSERT_FALSE(protocol.ok());
  EXPECT_EQ(protocol.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(protocol.status().message(), HasSubstr("'missing'"));
  EXPECT_THAT(protocol.status().message(), HasSubstr("reach"));
}

TEST_F(ProtocolTest, ValidationNamesWhatIsWrong) {
  auto base = LoadProtocol(WriteYaml(dir_, "p.yaml", kProtocol));
  ASSERT_TRUE(base.ok());
  auto error = [&](auto mutate) {
    v1::Protocol copy = *base;
    mutate(&copy);
    return std::string(ValidateProtocol(copy, kTasks).message());
  };
  EXPECT_THAT(error([](v1::Protocol* p) { p->set_task("walker"); }),
              HasSubstr("unknown task 'walker'; known tasks: cartpole-swingup, reacher"));
  EXPECT_THAT(error([](v1::Protocol* p) { p->set_episodes(0); }), HasSubstr("episodes must be >= 1"));
  EXPECT_THAT(error([](v1::Protocol* p) { p->set_max_steps(0); }), HasSubstr("max_steps must be >= 1"));
  EXPECT_THAT(error([](v1::Protocol* p) { p->set_max_steps(-5); }), HasSubstr("(got -5)"));
  EXPECT_THAT(error([](v1::Protocol* p) { p->set_seed_start(-1); }), HasSubstr("seed_start"));
  // Found by fuzzing (tests/fuzz/corpus/protocol/regression_seed_range_overflow).
  EXPECT_THAT(error([](v1::Protocol* p) {
                p->set_seed_start(std::numeric_limits<int64_t>::max() - 5);
                p->set_episodes(6);
              }),
              HasSubstr("seed_start + episodes must be at most 2^63 - 1 (got 9223372036854775802 + 6)"));
  EXPECT_THAT(error([](v1::Protocol* p) { p->mutable_execution()->mutable_chunk()->set_receding_steps(0); }),
              HasSubstr("receding_steps"));
  EXPECT_THAT(error([](v1::Protocol* p) { p->clear_execution(); }),
              HasSubstr("execution.chunk.mode must be FULL_CHUNK, RECEDING_HORIZON or TEMPORAL_ENSEMBLE (the protocol "
                        "sets none: add e.g. `execution: {chunk: {mode: FULL_CHUNK}}`)"));
  EXPECT_THAT(error([](v1::Protocol* p) { p->set_episodes(0); }), HasSubstr("protocol 'p'"));
  EXPECT_EQ(error([](v1::Protocol* p) { p->set_name("gate\rX"); }),
            "protocol name 'gate\\rX' holds a control character: names are shown in tables and logs");
}

// Outside the repository the default folder is missing: the error says which flag names another.
TEST_F(ProtocolTest, AnUnreadableProtocolsFolderNamesTheFlag) {
  auto protocol = LoadProtocol("gate", dir_ + "/absent");
  EXPECT_THAT(protocol.status().message(),
              HasSubstr("none (cannot list " + dir_ + "/absent; --protocols-dir names the folder to read)"));
}

TEST_F(ProtocolTest, PinTaskDefinition) {
  v1::Protocol protocol;
  protocol.set_name("p");
  ASSERT_TRUE(PinTaskDefinition("h1", &protocol).ok());
  EXPECT_EQ(protocol.task_definition_hash(), "h1");
  EXPECT_TRUE(PinTaskDefinition("h1", &protocol).ok());
  absl::Status mismatch = PinTaskDefinition("h2", &protocol);
  EXPECT_EQ(mismatch.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(mismatch.message(), HasSubstr("h1"));
  EXPECT_THAT(mismatch.message(), HasSubstr("h2"));
}

TEST(SeedRangeTest, Overlaps) {
  EXPECT_TRUE(Overlaps({0, 0, 10, ""}, {0, 9, 5, ""}));
  EXPECT_FALSE(Overlaps({0, 0, 10, ""}, {0, 10, 5, ""}));
  EXPECT_TRUE(Overlaps({0, 5, 1, ""}, {0, 0, 100, ""}));
  EXPECT_FALSE(Overlaps({0, 0, 10, ""}, {1, 0, 10, ""}));
  EXPECT_FALSE(Overlaps({0, 0, 0, ""}, {0, 0, 10, ""}));
  EXPECT_TRUE(Overlaps({0, INT64_MAX - 1, 1, ""}, {0, 0, INT64_MAX, ""}));
}

TEST(SeedRangeTest, DisjointCheckNamesBothRanges) {
  v1::Protocol protocol;
  protocol.set_name("gate");
  protocol.set_seed_start(1000000);
  protocol.set_episodes(200);
  std::vector<SeedRange> used = {{0, 0, 5000, "dataset demos:v1"}, {7, 1000000, 10, "dataset other"}};
  EXPECT_TRUE(CheckSeedsDisjoint(protocol, used).ok());
  used.push_back({0, 1000150, 100, "dataset feedback:v3"});
  absl::Status status = CheckSeedsDisjoint(protocol, used);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("protocol 'gate' (base seed 0, episodes [1000000, 1000200))"));
  EXPECT_THAT(status.message(), HasSubstr("dataset feedback:v3 (base seed 0, episodes [1000150, 1000250))"));
}

TEST(SeedRangeTest, DescribesARangeEndingAtTheLastIndex) {
  const SeedRange range{3, std::numeric_limits<int64_t>::max() - 1, 2, ""};
  EXPECT_EQ(DescribeSeedRange(range), "base seed 3, episodes [9223372036854775806, 9223372036854775808)");
}

TEST(ShippedProtocolsTest, LoadValidateAndAreDisjoint) {
  const std::string dir = std::string(ROBOLOOP_SOURCE_DIR) + "/configs/protocols";
  const std::vector<std::string> tasks = {"cartpole-swingup", "reacher"};
  auto gate = LoadProtocol("cartpole-swingup-gate", dir);
  auto feedback = LoadProtocol("cartpole-swingup-feedback", dir);
  auto reacher = LoadProtocol("reacher-gate", dir);
  ASSERT_TRUE(gate.ok() && feedback.ok() && reacher.ok())
      << gate.status() << feedback.status() << reacher.status();
  for (const v1::Protocol* p : {&*gate, &*feedback, &*reacher}) {
    EXPECT_TRUE(ValidateProtocol(*p, tasks).ok()) << p->name();
  }
  EXPECT_EQ(gate->episodes(), 200);
  EXPECT_EQ(gate->seed_start(), 1000000);
  SeedRange feedback_seeds = ProtocolSeeds(*feedback);
  EXPECT_TRUE(CheckSeedsDisjoint(*gate, {&feedback_seeds, 1}).ok());
}

}  // namespace
}  // namespace roboloop::eval
