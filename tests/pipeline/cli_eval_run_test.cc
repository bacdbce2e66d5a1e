// `roboloop eval`, `roboloop promote`, `roboloop serve sim|eval` driven as a user would: a
// checkpoint trained by the CLI, the real binary, exit codes and output; servers run as their
// own processes on unix sockets.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "eval/eval_client.h"
#include "tests/util/subprocess.h"
#include "tests/util/tiny_checkpoint.h"

namespace roboloop::cli {
namespace {

using ::testing::HasSubstr;
using roboloop::testing::ProgramResult;

// A `roboloop serve ...` process listening on a unix socket; stopped with SIGTERM on destruction.
class ServerProcess {
 public:
  ServerProcess(std::vector<std::string> args, const std::string& socket) {
    std::vector<std::string> argv = {roboloop::testing::RoboloopBinary()};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = fork();
    if (pid_ == 0) {
      std::vector<char*> raw;
      for (std::string& a : argv) raw.push_back(a.data());
      raw.push_back(nullptr);
      execv(raw[0], raw.data());
      _exit(127);
    }
    for (int i = 0; i < 200 && access(socket.c_str(), F_OK) != 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
  }
  ~ServerProcess() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
  }

 private:
  pid_t pid_ = -1;
};

class CliEvalRunTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(roboloop::testing::MakeTempDir("cli-eval-run"));
    roboloop::testing::TinyCheckpointOptions options;
    options.root = *dir_ + "/store";
    options.kind = "mlp";
    checkpoint_ = new std::string(roboloop::testing::MakeTinyCheckpoint(options));
    ASSERT_EQ(std::system(("mkdir -p " + *dir_ + "/protocols").c_str()), 0);
    std::ofstream(*dir_ + "/protocols/gate.yaml")
        << "task: cartpole-swingup\nseed_start: 5000\nepisodes: 6\nmax_steps: 15\n"
           "execution: {chunk: {mode: TEMPORAL_ENSEMBLE, ensemble_coefficient: 0.1}}\n";
    std::ofstream(*dir_ + "/protocols/overlap.yaml")
        << "task: cartpole-swingup\nseed_start: 4\nepisodes: 6\nmax_steps: 15\n"
           "execution: {chunk: {mode: FULL_CHUNK}}\n";
  }

  void SetUp() override { ASSERT_FALSE(checkpoint_->empty()); }

  static ProgramResult Roboloop(std::vector<std::string> args) {
    args.insert(args.end(), {"--root", *dir_ + "/store", "--protocols-dir", *dir_ + "/protocols"});
    return roboloop::testing::RunRoboloop(args);
  }

  static std::string EvaluationId(const std::string& out) {
    std::smatch match;
    return std::regex_search(out, match, std::regex("evaluation  ([0-9a-f-]{36})")) ? match[1].str() : "";
  }

  static std::string* dir_;
  static std::string* checkpoint_;
};

std::string* CliEvalRunTest::dir_ = nullptr;
std::string* CliEvalRunTest::checkpoint_ = nullptr;

TEST_F(CliEvalRunTest, EvalRunsCachesAndForces) {
  ProgramResult first = Roboloop({"eval", "tiny@latest", "--task", "cartpole-swingup", "--episodes", "4",
                                  "--max-steps", "12", "--seed", "9", "--first-episode", "100"});
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  EXPECT_THAT(first.out, HasSubstr(*checkpoint_));
  EXPECT_THAT(first.out, HasSubstr("episodes [100, 104), max steps 12"));
  EXPECT_THAT(first.out, HasSubstr("/4)"));
  const std::string id = EvaluationId(first.out);
  ASSERT_FALSE(id.empty()) << first.out;
  ProgramResult again = Roboloop({"eval", "tiny@latest", "--task", "cartpole-swingup", "--episodes", "4",
                                  "--max-steps", "12", "--seed", "9", "--first-episode", "100"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(EvaluationId(again.out), id);
  EXPECT_THAT(again.out, HasSubstr("cached"));
  ProgramResult forced = Roboloop({"eval", "tiny@latest", "--task", "cartpole-swingup", "--episodes", "4",
                                   "--max-steps", "12", "--seed", "9", "--first-episode", "100", "--force"});
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_NE(EvaluationId(forced.out), id);
  ProgramResult board = Roboloop({"leaderboard", "--task", "cartpole-swingup", "--format", "json"});
  ASSERT_EQ(board.exit_code, 0) << board.err;
  EXPECT_THAT(board.out, HasSubstr(*checkpoint_));

  // What eval and leaderboard print is accepted back: hash prefixes, the ad-hoc protocol's name,
  // and checkpoint references the way the registry takes them.
  std::smatch shown;
  ASSERT_TRUE(std::regex_search(first.out, shown, std::regex("cartpole-swingup-adhoc \\(([0-9a-f]{12})\\)")))
      << first.out;
  const std::string prefix = shown[1].str();
  for (const std::string& protocol : {prefix, prefix.substr(0, 8), std::string("cartpole-swingup-adhoc")}) {
    ProgramResult by_prefix = Roboloop({"leaderboard", "--protocol", protocol});
    EXPECT_EQ(by_prefix.exit_code, 0) << protocol << ": " << by_prefix.err;
    EXPECT_THAT(by_prefix.out, HasSubstr(checkpoint_->substr(0, 12))) << protocol;
  }
  ProgramResult compare = Roboloop({"compare", "tiny:v1", checkpoint_->substr(0, 12), "--protocol", prefix});
  ASSERT_EQ(compare.exit_code, 0) << compare.err;
  EXPECT_THAT(compare.out, HasSubstr("verdict    no significant difference"));
  EXPECT_EQ(Roboloop({"compare", "tiny@latest", "tiny:v1", "--protocol", prefix.substr(0, 8)}).exit_code, 0);
  ProgramResult unknown = Roboloop({"compare", "tiny:v9", "tiny:v1", "--protocol", prefix});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("tiny:v9"));
}

// `eval --format json` gives its episodes' state hashes as sim rollout does: 16 hex digits, not
// protobuf's decimal strings.
TEST_F(CliEvalRunTest, EvalJsonGivesStateHashesInHex) {
  ProgramResult json = Roboloop({"eval", "tiny@latest", "--task", "cartpole-swingup", "--episodes", "3",
                                 "--max-steps", "10", "--seed", "21", "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const std::regex hash_field("\"(state_hash_chain|final_state_hash)\": \"([^\"]*)\"");
  const std::regex hex("[0-9a-f]{16}");
  int hashes = 0;
  bool letters = false;
  for (std::sregex_iterator it(json.out.begin(), json.out.end(), hash_field), end; it != end; ++it) {
    const std::string value = (*it)[2].str();
    EXPECT_TRUE(std::regex_match(value, hex)) << (*it)[1].str() << ": " << value;
    letters = letters || value.find_first_of("abcdef") != std::string::npos;
    ++hashes;
  }
  EXPECT_EQ(hashes, 6) << json.out;
  EXPECT_TRUE(letters) << "decimal digits only: " << json.out;
}

TEST_F(CliEvalRunTest, SimRolloutRunsACheckpointAndRefusesOneThatDoesNotFit) {
  const std::string binary = roboloop::testing::RoboloopBinary();
  const std::string root = *dir_ + "/store";
  ProgramResult one = roboloop::testing::RunProgram(
      {binary, "sim", "rollout", "--task", "cartpole-swingup", "--policy", "tiny@latest", "--episodes", "3",
       "--max-steps", "10", "--envs", "1", "--chunk-execution", "receding_horizon:2", "--root", root,
       "--format", "json"});
  ProgramResult three = roboloop::testing::RunProgram(
      {binary, "sim", "rollout", "--task", "cartpole-swingup", "--policy", "tiny@latest", "--episodes", "3",
       "--max-steps", "10", "--envs", "3", "--chunk-execution", "receding_horizon:2", "--root", root,
       "--format", "json"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  ASSERT_EQ(three.exit_code, 0) << three.err;
  auto hashes = [](const std::string& out) {
    std::set<std::string> found;
    const std::regex chain("\"state_hash_chain\":\"([0-9a-f]{16})\"");
    for (auto it = std::sregex_iterator(out.begin(), out.end(), chain); it != std::sregex_iterator(); ++it) {
      found.insert((*it)[1].str());
    }
    return found;
  };
  EXPECT_EQ(hashes(one.out).size(), 3u) << one.out;
  EXPECT_EQ(hashes(one.out), hashes(three.out));
  ProgramResult wrong = roboloop::testing::RunProgram(
      {binary, "sim", "rollout", "--task", "reacher", "--policy", "tiny@latest", "--episodes", "2", "--root", root});
  EXPECT_NE(wrong.exit_code, 0);
  EXPECT_THAT(wrong.err, HasSubstr("does not fit the task"));
  EXPECT_THAT(wrong.err, HasSubstr(*checkpoint_));
}

TEST_F(CliEvalRunTest, EvalRefusesBadInputBeforeAnyRollout) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"eval", "tiny@latest", "--task", "reacher", "--episodes", "3"}, "does not fit the task"},
      {{"eval", "tiny@latest", "--task", "cartpole-swingup", "--episodes", "0"}, "episodes must be >= 1"},
      {{"eval", "tiny@latest", "--task", "no-such-task"}, "cartpole-swingup"},
      {{"eval", "tiny@latest", "--protocol", "no-such-protocol"}, "no-such-protocol"},
      {{"eval", "nobody@latest", "--protocol", "gate"}, "nobody@latest"},
      {{"eval", "tiny@latest", "--protocol", "gate", "--task", "cartpole-swingup"}, "exactly one of"},
      {{"eval", "tiny@latest", "--task", "cartpole-swingup", "--chunk-execution", "sideways"}, "sideways"},
  };
  for (const Case& c : cases) {
    ProgramResult result = Roboloop(c.args);
    EXPECT_NE(result.exit_code, 0) << c.message;
    EXPECT_THAT(result.err, HasSubstr(c.message));
    EXPECT_THAT(result.err, ::testing::Not(HasSubstr("stored as failed")));
  }
}

// A YAML task reaches the embedded sim service of `eval` and `promote` (the cartpole checkpoint
// then does not fit it: the task was found); a remote --sim loads its own tasks.
TEST_F(CliEvalRunTest, EvalAndPromoteTakeYamlTasksForTheirEmbeddedSimService) {
  const std::string yaml = ROBOLOOP_SOURCE_DIR "/configs/tasks/point_reach.yaml";
  ProgramResult eval = Roboloop({"eval", "tiny@latest", "--task", "yaml-point-reach", "--task-yaml", yaml,
                                 "--episodes", "2"});
  EXPECT_EQ(eval.exit_code, 1) << eval.err;
  EXPECT_THAT(eval.err, HasSubstr("does not fit the task"));
  std::ofstream(*dir_ + "/point-gate.yaml") << "task: yaml-point-reach\nseed_start: 9000\nepisodes: 2\nmax_steps: 5\n"
                                               "execution: {chunk: {mode: FULL_CHUNK}}\n";
  ProgramResult promote = Roboloop({"promote", "tiny", "--protocol", *dir_ + "/point-gate.yaml", "--task-yaml", yaml});
  EXPECT_EQ(promote.exit_code, 1) << promote.err;
  EXPECT_THAT(promote.err, HasSubstr("does not fit the task"));
  ProgramResult remote = Roboloop({"eval", "tiny@latest", "--task", "yaml-point-reach", "--task-yaml", yaml,
                                   "--sim", "unix:" + *dir_ + "/none.sock"});
  EXPECT_EQ(remote.exit_code, 2) << remote.err;
  EXPECT_THAT(remote.err, HasSubstr("--sim excludes --task-yaml"));
}

TEST_F(CliEvalRunTest, PromoteNeedsDisjointSeedsAndMovesTheFirstChampion) {
  ProgramResult overlap = Roboloop({"promote", "tiny", "--protocol", "overlap"});
  EXPECT_NE(overlap.exit_code, 0);
  EXPECT_THAT(overlap.err, HasSubstr("episodes [4, 10)"));
  EXPECT_THAT(overlap.err, HasSubstr("episodes [0, 6)"));
  ProgramResult unknown = Roboloop({"promote", "tiny", "--protocol", "nope"});
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_THAT(unknown.err, HasSubstr("nope"));
  ProgramResult promoted = Roboloop({"promote", "tiny", "--protocol", "gate"});
  ASSERT_EQ(promoted.exit_code, 0) << promoted.out << promoted.err;
  EXPECT_THAT(promoted.out, HasSubstr("promoted tiny@champion: first champion"));
  ProgramResult again = Roboloop({"promote", "tiny", "--protocol", "gate"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("not promoted"));
  ProgramResult history = roboloop::testing::RunProgram(
      {roboloop::testing::RoboloopBinary(), "registry", "history", "tiny", "--root", *dir_ + "/store"});
  EXPECT_THAT(history.out + history.err, HasSubstr("first champion"));
}

TEST_F(CliEvalRunTest, RemoteSimAndServeEvalGiveTheEmbeddedResult) {
  const std::string sim_socket = *dir_ + "/sim.sock";
  const std::string eval_socket = *dir_ + "/eval.sock";
  ServerProcess sim({"serve", "sim", "--listen", "unix:" + sim_socket, "--root", *dir_ + "/store"}, sim_socket);
  ProgramResult remote = Roboloop({"eval", "tiny@latest", "--protocol", "gate", "--sim", "unix:" + sim_socket,
                                   "--force", "--format", "json"});
  ProgramResult embedded = Roboloop({"eval", "tiny@latest", "--protocol", "gate", "--force", "--format", "json"});
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  ASSERT_EQ(embedded.exit_code, 0) << embedded.err;
  // Aggregates and episodes: from "aggregates" up to "provenance" (ids and times differ).
  auto results = [](const std::string& json) {
    const size_t start = json.find("\"aggregates\"");
    return json.substr(start, json.find("\"provenance\"") - start);
  };
  EXPECT_THAT(results(remote.out), HasSubstr("\"state_hash_chain\""));
  EXPECT_EQ(results(remote.out), results(embedded.out));

  // A served sim writes datasets only inside its dataset folder, <root>/datasets by default.
  const std::vector<std::string> collect = {roboloop::testing::RoboloopBinary(), "sim", "collect", "--task",
                                            "cartpole-swingup", "--policy", "expert", "--episodes", "1",
                                            "--max-steps", "5", "--sim", "unix:" + sim_socket};
  std::vector<std::string> outside = collect;
  outside.insert(outside.end(), {"-o", *dir_ + "/outside.hdf5"});
  ProgramResult refused = roboloop::testing::RunProgram(outside);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.err, HasSubstr("absolute paths are not allowed"));
  EXPECT_FALSE(std::ifstream(*dir_ + "/outside.hdf5").good());
  std::vector<std::string> inside = collect;
  inside.insert(inside.end(), {"-o", "demos/one.hdf5"});
  ProgramResult written = roboloop::testing::RunProgram(inside);
  EXPECT_EQ(written.exit_code, 0) << written.err;
  EXPECT_TRUE(std::ifstream(*dir_ + "/store/datasets/demos/one.hdf5").good());

  ServerProcess server({"serve", "eval", "--listen", "unix:" + eval_socket, "--root", *dir_ + "/store",
                        "--protocols-dir", *dir_ + "/protocols", "--sim", "unix:" + sim_socket},
                       eval_socket);
  common::GrpcChannelOptions channel;
  channel.target = "unix:" + eval_socket;
  auto client = eval::EvalClient::Connect(channel);
  ASSERT_TRUE(client.ok()) << client.status();
  v1::EvaluateRequest request;
  request.set_checkpoint_ref("tiny@latest");
  request.set_protocol_name("gate");
  auto evaluation = (*client)->Evaluate(request, {});
  ASSERT_TRUE(evaluation.ok()) << evaluation.status();
  EXPECT_EQ(evaluation->episodes_size(), 6);
  EXPECT_EQ(evaluation->checkpoint_id(), *checkpoint_);
}

// A served sim checks a Relabel input with a program of its own before reading it: a file that crashes libhdf5
// (docs/RELIABILITY.md) fails that request with an error naming it, and the server goes on serving.
TEST_F(CliEvalRunTest, ServedSimRefusesADatasetThatCrashesLibhdf5AndGoesOnServing) {
  const std::string sim_socket = *dir_ + "/hostile-sim.sock";
  const std::string store = *dir_ + "/hostile-store";
  ServerProcess sim({"serve", "sim", "--listen", "unix:" + sim_socket, "--root", store}, sim_socket);
  const auto sim_command = [&](std::vector<std::string> args) {
    args.insert(args.begin(), "sim");
    args.insert(args.end(), {"--sim", "unix:" + sim_socket});
    return roboloop::testing::RunRoboloop(args);
  };
  std::filesystem::create_directories(store + "/datasets");
  std::filesystem::copy_file(std::string(ROBOLOOP_THIRD_PARTY_FINDINGS) + "/hdf5_h5hg_read_memcpy_overlap.hdf5",
                             store + "/datasets/hostile.hdf5");
  ProgramResult refused =
      sim_command({"relabel", "hostile.hdf5", "-o", "relabelled.hdf5", "--task", "cartpole-swingup"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.err, HasSubstr("hostile.hdf5: validation crashed"));
  EXPECT_THAT(refused.err, HasSubstr("the file is likely corrupt"));
  EXPECT_FALSE(std::filesystem::exists(store + "/datasets/relabelled.hdf5"));

  ProgramResult collected = sim_command({"collect", "--task", "cartpole-swingup", "--policy", "expert", "--episodes",
                                         "1", "--max-steps", "5", "-o", "demos.hdf5"});
  ASSERT_EQ(collected.exit_code, 0) << collected.err;
  ProgramResult relabelled = sim_command({"relabel", "demos.hdf5", "-o", "relabelled.hdf5"});
  EXPECT_EQ(relabelled.exit_code, 0) << relabelled.err;
  EXPECT_TRUE(std::filesystem::exists(store + "/datasets/relabelled.hdf5"));
}

}  // namespace
}  // namespace roboloop::cli
