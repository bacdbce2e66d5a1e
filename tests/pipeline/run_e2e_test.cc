// `roboloop run` end to end (issue 8, req 9), driven as a user would with the real binary:
// the quick start at a reduced size must beat a random policy by the paired test; a killed
// runner resumes without redoing finished stages; SIGINT during training stops the training
// service's job and the run resumes; a train stage stopped by Ctrl-C or by a SIGKILL of its
// runner continues from its last checkpoint with the losses of an uninterrupted run, and the
// killed run reads as interrupted until then; services running as separate token-protected
// processes run a pipeline.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/metrics.h"
#include "tests/util/served_process.h"
#include "tests/util/subprocess.h"

namespace roboloop::cli {
namespace {

using ::testing::HasSubstr;
using roboloop::testing::ProgramResult;
using roboloop::testing::ServedProcess;

const std::string kSource = ROBOLOOP_SOURCE_DIR;

// The quick start with fewer episodes and steps; same stages.
std::vector<std::string> ReducedQuickstart(const std::string& root, int train_steps) {
  return {roboloop::testing::RoboloopBinary(), "run", kSource + "/configs/pipelines/quickstart.yaml",
          "--root", root, "--protocols-dir", kSource + "/configs/protocols",
          "--set", "vars.model=quickstart-test", "--set", "demos.episodes=60",
          "--set", "train.steps=" + std::to_string(train_steps), "--set", "finetune.steps=200",
          "--set", "improve.max_iterations=1", "--set", "improve.until=${gate.success.lower} >= 0.0"};
}

// Successes per episode index, from JSON lines or an evaluation's "episodes".
std::map<int64_t, bool> Successes(const std::vector<nlohmann::json>& episodes) {
  std::map<int64_t, bool> out;
  for (const nlohmann::json& e : episodes) {
    const nlohmann::json& index = e.at("episode_index");  // proto JSON writes int64 as a string
    out[index.is_string() ? std::stoll(index.get<std::string>()) : index.get<int64_t>()] = e.value("success", false);
  }
  return out;
}

std::string RunIdOf(const std::string& out) {
  std::smatch match;
  static const std::regex kRun("run ([0-9a-f-]{36}):");
  return std::regex_search(out, match, kRun) ? match[1].str() : "";
}

// Waits up to `seconds` for `path` to contain `text`.
bool WaitForText(const std::string& path, const std::string& text, int seconds) {
  for (int i = 0; i < seconds * 10; ++i) {
    if (roboloop::testing::ReadWholeFile(path).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// Training processes (`... train ...`) whose command line mentions `needle`.
int ProcessesMentioning(const std::string& needle) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos || name == std::to_string(getpid())) continue;
    std::string cmdline = roboloop::testing::ReadWholeFile(entry.path().string() + "/cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(needle) != std::string::npos && cmdline.find(" train ") != std::string::npos) ++count;
  }
  return count;
}

std::string StatusOf(const std::string& root, const std::string& run) {
  return roboloop::testing::RunProgram({roboloop::testing::RoboloopBinary(), "status", run, "--root", root}).out;
}

int Count(const std::string& text, const std::string& pattern) {
  std::regex re(pattern);
  return static_cast<int>(std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

TEST(RunE2eTest, ReducedQuickstartBeatsARandomPolicyByThePairedTest) {
  const std::string dir = roboloop::testing::MakeTempDir("run-quick");
  const std::string root = dir + "/.roboloop";
  ProgramResult run = roboloop::testing::RunProgram(ReducedQuickstart(root, 800), {}, dir);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("bc_gate: cartpole-swingup-gate success "));
  EXPECT_THAT(run.out, HasSubstr("bc_promote: champion of quickstart-test"));
  EXPECT_THAT(run.out, HasSubstr("improve[1].gate: cartpole-swingup-gate success "));
  EXPECT_THAT(run.out, HasSubstr("loop_gain: "));
  EXPECT_THAT(run.out, HasSubstr("\n  promote: champion of quickstart-test"));
  EXPECT_THAT(run.out, HasSubstr("leaderboard row: quickstart-test:v"));
  EXPECT_THAT(run.out, HasSubstr("report: "));
  EXPECT_THAT(roboloop::testing::ReadWholeFile(root + "/pipeline/runs/" + RunIdOf(run.out) + "/quickstart-report.html"),
              HasSubstr("Leaderboard"));

  ProgramResult trained = roboloop::testing::RunProgram(
      {roboloop::testing::RoboloopBinary(), "eval", "quickstart-test@champion", "--protocol", "cartpole-swingup-gate",
       "--protocols-dir", kSource + "/configs/protocols", "--root", root, "--format", "json"}, {}, dir);
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
  const nlohmann::json evaluation = nlohmann::json::parse(trained.out.substr(trained.out.find('{')));
  std::map<int64_t, bool> policy = Successes(evaluation.at("episodes").get<std::vector<nlohmann::json>>());

  ProgramResult random = roboloop::testing::RunProgram(
      {roboloop::testing::RoboloopBinary(), "sim", "rollout", "--task", "cartpole-swingup", "--policy", "random",
       "--seed", "0", "--first-episode", "1000000", "--episodes", "200", "--max-steps", "500", "--format", "json"});
  ASSERT_EQ(random.exit_code, 0) << random.err;
  std::vector<nlohmann::json> lines;
  std::istringstream in(random.out);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.front() == '{') lines.push_back(nlohmann::json::parse(line));
  }
  std::map<int64_t, bool> baseline = Successes(lines);
  ASSERT_EQ(policy.size(), 200u);
  ASSERT_EQ(baseline.size(), 200u);
  int64_t policy_only = 0, random_only = 0;
  for (const auto& [episode, success] : policy) {
    ASSERT_TRUE(baseline.count(episode)) << "episode " << episode << " is paired";
    policy_only += success && !baseline[episode];
    random_only += !success && baseline[episode];
  }
  absl::StatusOr<double> p = eval::McNemarExactP(policy_only, random_only);
  ASSERT_TRUE(p.ok());
  EXPECT_GT(policy_only, random_only);
  EXPECT_LT(*p, 0.05) << "trained-only successes " << policy_only << ", random-only " << random_only;
}

TEST(RunE2eTest, ConditionNotMetExitsWithCode3AndKeepsWhatItRegistered) {
  const std::string dir = roboloop::testing::MakeTempDir("run-unmet");
  const std::string root = dir + "/.roboloop";
  std::vector<std::string> argv = ReducedQuickstart(root, 20);
  argv.back() = "improve.until=${gate.success.lower} >= 0.999";
  argv.insert(argv.end(), {"--set", "demos.episodes=10", "--set", "finetune.steps=10"});
  ProgramResult run = roboloop::testing::RunProgram(argv, {}, dir);
  EXPECT_EQ(run.exit_code, 3) << run.out << run.err;
  EXPECT_THAT(run.err, HasSubstr("condition not met"));
  ProgramResult datasets = roboloop::testing::RunProgram(
      {roboloop::testing::RoboloopBinary(), "registry", "ls", "--datasets", "--root", root});
  EXPECT_THAT(datasets.out, HasSubstr("quickstart-merged")) << datasets.out << datasets.err;
  ProgramResult checkpoints = roboloop::testing::RunProgram(
      {roboloop::testing::RoboloopBinary(), "registry", "ls", "--root", root});
  EXPECT_THAT(checkpoints.out, HasSubstr("quickstart-test")) << checkpoints.out << checkpoints.err;
  EXPECT_THAT(StatusOf(root, RunIdOf(run.out)), HasSubstr("failed"));
}

TEST(RunE2eTest, AKilledRunnerResumesWithoutRedoingFinishedStages) {
  const std::string dir = roboloop::testing::MakeTempDir("run-kill");
  const std::string root = dir + "/.roboloop";
  roboloop::testing::RunningProgram running = roboloop::testing::StartProgram(ReducedQuickstart(root, 3000), {}, dir);
  ASSERT_TRUE(WaitForText(running.out_path, "train: ", 120)) << roboloop::testing::ReadWholeFile(running.err_path);
  const std::string run_id = RunIdOf(roboloop::testing::ReadWholeFile(running.out_path));
  kill(running.pid, SIGKILL);
  ProgramResult killed = roboloop::testing::FinishProgram(running);
  EXPECT_EQ(killed.exit_code, 128 + SIGKILL);
  ASSERT_FALSE(run_id.empty()) << killed.out;
  for (int i = 0; i < 100 && ProcessesMentioning(root) > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(ProcessesMentioning(root), 0) << "the training of a killed runner stops with it";

  std::vector<std::string> resume = {roboloop::testing::RoboloopBinary(), "run", "--resume", run_id, "--root", root,
                                     "--protocols-dir", kSource + "/configs/protocols", "--set", "vars.model=quickstart-test",
                                     "--set", "demos.episodes=60", "--set", "train.steps=400", "--set", "finetune.steps=50",
                                     "--set", "improve.max_iterations=1", "--set", "improve.until=${gate.success.lower} >= 0.0"};
  ProgramResult resumed = roboloop::testing::RunProgram(resume, {}, dir);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  const std::string status = StatusOf(root, run_id);
  EXPECT_EQ(Count(status, R"(\ndemos\s+finished)"), 1) << status;
  EXPECT_EQ(Count(status, R"(\ndemos\s+cached)"), 1) << "the resumed run reuses demos: " << status;
  EXPECT_THAT(status, HasSubstr("finished"));
}

TEST(RunE2eTest, SigintDuringTrainingStopsTheTrainingJobAndTheRunResumes) {
  const std::string dir = roboloop::testing::MakeTempDir("run-sigint");
  const std::string root = dir + "/.roboloop";
  std::vector<std::string> argv = ReducedQuickstart(root, 5000);
  roboloop::testing::RunningProgram running = roboloop::testing::StartProgram(argv, {}, dir);
  ASSERT_TRUE(WaitForText(running.out_path, "train: ", 120)) << roboloop::testing::ReadWholeFile(running.err_path);
  ASSERT_GT(ProcessesMentioning(root), 0) << "training runs";
  kill(running.pid, SIGINT);
  ProgramResult stopped = roboloop::testing::FinishProgram(running);
  EXPECT_EQ(stopped.exit_code, 130) << stopped.out << stopped.err;
  EXPECT_THAT(stopped.err, HasSubstr("--resume"));
  EXPECT_EQ(ProcessesMentioning(root), 0) << "Cancel stopped the training service's job";
  const std::string run_id = RunIdOf(stopped.out);
  EXPECT_THAT(StatusOf(root, run_id), HasSubstr("cancelled"));

  std::vector<std::string> resume = {roboloop::testing::RoboloopBinary(), "run", "--resume", run_id};
  for (size_t i = 3; i < argv.size(); ++i) resume.push_back(argv[i] == "train.steps=5000" ? "train.steps=300" : argv[i]);
  ProgramResult resumed = roboloop::testing::RunProgram(resume, {}, dir);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
}

// A collection and a small transformer trained long enough (a few seconds) that a stop lands
// mid-training, checkpointing every 50 steps.
constexpr char kTrainPipeline[] = R"(name: resumable
stages:
  - {name: demos, kind: collect, collect: {task: cartpole-swingup, policy: expert, episodes: 6, max_steps: 100}}
  - name: train
    kind: train
    train:
      dataset: ${demos.dataset}
      model: resume-test
      policy: {kind: transformer, history: 2, chunk: 4, d_model: 32, layers: 2, heads: 2, ffn: 64}
      optimizer: {lr: 0.001, warmup_steps: 5, clip_norm: 1.0}
      steps: 2000
      batch_size: 16
      seed: 3
      checkpoint_every: 50
)";

// One training run's log under <root>/runs: step -> loss, in the order written.
struct TrainingLog {
  std::map<int64_t, double> losses;
  bool finished = false;
};

std::vector<TrainingLog> TrainingLogs(const std::string& root) {
  std::vector<TrainingLog> logs;
  if (!std::filesystem::exists(root + "/runs")) return logs;
  for (const auto& run : std::filesystem::directory_iterator(root + "/runs")) {
    TrainingLog log;
    std::ifstream in(run.path() / "train.jsonl");
    for (std::string line; std::getline(in, line);) {
      const nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
      if (!record.is_object()) continue;
      log.finished = log.finished || record.contains("finished");
      if (record.contains("step")) {
        log.losses[std::stoll(record["step"].value("step", std::string("0")))] = record["step"]["loss"].get<double>();
      }
    }
    logs.push_back(log);
  }
  return logs;
}

bool TrainingReached(const std::string& root, int64_t step) {
  for (const TrainingLog& log : TrainingLogs(root)) {
    if (log.losses.count(step)) return true;
  }
  return false;
}

std::vector<std::string> RunArgv(const std::string& dir, const std::string& root) {
  return {roboloop::testing::RoboloopBinary(), "run", dir + "/p.yaml", "--root", root};
}

// Starts the train pipeline under `root`, waits for step 120 and sends `signal` to the runner.
ProgramResult StopDuringTraining(const std::string& dir, const std::string& root, int signal, std::string* run_id) {
  roboloop::testing::RunningProgram running = roboloop::testing::StartProgram(RunArgv(dir, root), {}, dir);
  for (int i = 0; i < 1200 && !TrainingReached(root, 120); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(TrainingReached(root, 120)) << roboloop::testing::ReadWholeFile(running.err_path);
  kill(running.pid, signal);
  ProgramResult stopped = roboloop::testing::FinishProgram(running);
  *run_id = RunIdOf(stopped.out);
  return stopped;
}

// The resumed run's training continued the stopped one: it began after step 1, the stopped
// training logged the steps before, and together they log the uninterrupted losses bitwise.
void ExpectTrainingContinued(const std::string& root, const std::map<int64_t, double>& uninterrupted) {
  const std::vector<TrainingLog> logs = TrainingLogs(root);
  ASSERT_EQ(logs.size(), 2u) << "the stopped training and its continuation";
  const TrainingLog& resumed = logs[0].finished ? logs[0] : logs[1];
  const TrainingLog& stopped = logs[0].finished ? logs[1] : logs[0];
  ASSERT_TRUE(resumed.finished && !stopped.finished);
  ASSERT_FALSE(resumed.losses.empty());
  const int64_t first = resumed.losses.begin()->first;
  EXPECT_GT(first, 100) << "the resumed training starts from the last checkpoint, not from step 0";
  EXPECT_TRUE(stopped.losses.count(first - 1)) << "from a step the stopped training made";
  std::map<int64_t, double> combined = stopped.losses;
  for (const auto& [step, loss] : resumed.losses) combined[step] = loss;
  ASSERT_EQ(combined.size(), uninterrupted.size());
  for (const auto& [step, loss] : uninterrupted) EXPECT_EQ(combined.at(step), loss) << "step " << step;
}

class TrainResumeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(roboloop::testing::MakeTempDir("run-resume"));
    std::ofstream(*dir_ + "/p.yaml") << kTrainPipeline;
    const std::string root = *dir_ + "/straight";
    ProgramResult straight = roboloop::testing::RunProgram(RunArgv(*dir_, root), {}, *dir_);
    ASSERT_EQ(straight.exit_code, 0) << straight.out << straight.err;
    const std::vector<TrainingLog> logs = TrainingLogs(root);
    ASSERT_EQ(logs.size(), 1u);
    uninterrupted_ = new std::map<int64_t, double>(logs[0].losses);
    ASSERT_EQ(uninterrupted_->size(), 2000u);
  }

  static std::string* dir_;
  static std::map<int64_t, double>* uninterrupted_;
};

std::string* TrainResumeTest::dir_ = nullptr;
std::map<int64_t, double>* TrainResumeTest::uninterrupted_ = nullptr;

TEST_F(TrainResumeTest, ACancelledTrainStageResumesFromItsLastCheckpointWithTheUninterruptedLosses) {
  const std::string root = *dir_ + "/cancelled";
  std::string run_id;
  ProgramResult stopped = StopDuringTraining(*dir_, root, SIGINT, &run_id);
  ASSERT_EQ(stopped.exit_code, 130) << stopped.out << stopped.err;
  ASSERT_FALSE(TrainingReached(root, 2000)) << "the run finished before it was stopped";
  ProgramResult resumed = roboloop::testing::RunProgram(
      {roboloop::testing::RoboloopBinary(), "run", "--resume", run_id, "--root", root}, {}, *dir_);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  ExpectTrainingContinued(root, *uninterrupted_);
}

TEST_F(TrainResumeTest, AKilledRunnerShowsInterruptedLeavesNoSocketsAndItsTrainingContinues) {
  const std::string root = *dir_ + "/killed";
  std::string run_id;
  ProgramResult killed = StopDuringTraining(*dir_, root, SIGKILL, &run_id);
  ASSERT_EQ(killed.exit_code, 128 + SIGKILL);
  ASSERT_FALSE(run_id.empty()) << killed.out;
  for (int i = 0; i < 100 && ProcessesMentioning(root) > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_FALSE(TrainingReached(root, 2000)) << "the run finished before it was killed";

  const std::string runs = roboloop::testing::RunProgram({roboloop::testing::RoboloopBinary(), "runs", "--root", root}).out;
  EXPECT_EQ(Count(runs, run_id + R"(\s+resumable\s+interrupted)"), 1) << runs;
  const std::string status = StatusOf(root, run_id);
  EXPECT_EQ(Count(status, R"(\ntrain\s+interrupted)"), 1) << status;
  EXPECT_EQ(Count(status, "running"), 0) << status;
  std::vector<std::string> left;
  for (const auto& socket : std::filesystem::directory_iterator(root + "/run")) left.push_back(socket.path());
  ASSERT_FALSE(left.empty()) << "the killed runner left its sockets";

  ProgramResult resumed = roboloop::testing::RunProgram(
      {roboloop::testing::RoboloopBinary(), "run", "--resume", run_id, "--root", root}, {}, *dir_);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  for (const std::string& socket : left) EXPECT_FALSE(std::filesystem::exists(socket)) << socket << " is stale";
  ExpectTrainingContinued(root, *uninterrupted_);
}

TEST(RunE2eTest, ServicesAsSeparateProcessesWithATokenRunAPipeline) {
  const std::string dir = roboloop::testing::MakeTempDir("run-remote");
  const std::string store = dir + "/store";
  std::ofstream(dir + "/token") << "pipeline-secret\n";
  const std::string registry = dir + "/registry.sock", sim = dir + "/sim.sock", train = dir + "/train.sock",
                    evals = dir + "/eval.sock";
  ServedProcess registry_server({"serve", "registry", "--listen", "unix:" + registry, "--root", store, "--token-file",
                          dir + "/token"}, registry, dir);
  ServedProcess sim_server({"serve", "sim", "--listen", "unix:" + sim, "--token-file", dir + "/token", "--registry",
                     "unix:" + registry, "--registry-token-file", dir + "/token", "--root", dir + "/sim",
                     "--dataset-dir", dir + "/sim/datasets"}, sim, dir);
  ServedProcess train_server({"serve", "train", "--listen", "unix:" + train, "--token-file", dir + "/token",
                       "--registry", "unix:" + registry, "--registry-token-file", dir + "/token", "--root", dir + "/train"},
                      train, dir);
  ServedProcess eval_server({"serve", "eval", "--listen", "unix:" + evals, "--token-file", dir + "/token", "--registry",
                      "unix:" + registry, "--registry-token-file", dir + "/token", "--root", store, "--sim",
                      "unix:" + sim, "--sim-token-file", dir + "/token", "--protocols-dir", kSource + "/configs/protocols"},
                     evals, dir);
  std::ofstream(dir + "/services.yaml") << "registry: {address: \"unix:" << registry << "\", token_file: token}\n"
                                        << "train: {address: \"unix:" << train << "\", token_file: token}\n"
                                        << "eval: {address: \"unix:" << evals << "\", token_file: token}\n"
                                        << "sim:\n  - {address: \"unix:" << sim << "\", token_file: token}\n";
  std::ofstream(dir + "/p.yaml") << R"(name: remote
stages:
  - {name: demos, kind: collect, collect: {task: cartpole-swingup, episodes: 10}}
  - name: train
    kind: train
    train: {dataset: "${demos.dataset}", model: remote-test, policy: {kind: mlp, hidden: [32]}, steps: 30}
  - {name: gate, kind: evaluate, evaluate: {checkpoint: "${train.checkpoint}", protocol: cartpole-swingup-gate}}
  - {name: promote, kind: promote, promote: {model: remote-test, candidate: "${train.checkpoint}", protocol: cartpole-swingup-gate}}
)";
  std::vector<std::string> argv = {roboloop::testing::RoboloopBinary(), "run", dir + "/p.yaml", "--services",
                                   dir + "/services.yaml", "--root", dir + "/runner", "--protocols-dir",
                                   kSource + "/configs/protocols"};
  ProgramResult run = roboloop::testing::RunProgram(argv, {}, dir);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("on remote services"));
  EXPECT_THAT(run.out, HasSubstr("champion of remote-test"));
  ProgramResult listed = roboloop::testing::RunProgram(
      {roboloop::testing::RoboloopBinary(), "registry", "ls", "--datasets", "--registry", "unix:" + registry, "--registry-token-file",
       dir + "/token"});
  EXPECT_THAT(listed.out, HasSubstr("remote-demos")) << listed.out << listed.err;

  std::ofstream(dir + "/wrong") << "not-the-token\n";
  std::ofstream(dir + "/bad.yaml") << "registry: {address: \"unix:" << registry << "\", token_file: wrong}\n"
                                   << "train: {address: \"unix:" << train << "\", token_file: wrong}\n"
                                   << "eval: {address: \"unix:" << evals << "\", token_file: wrong}\n"
                                   << "sim:\n  - {address: \"unix:" << sim << "\", token_file: wrong}\n";
  argv[4] = dir + "/bad.yaml";
  argv.push_back("--no-cache");
  ProgramResult refused = roboloop::testing::RunProgram(argv, {}, dir);
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.err, HasSubstr("invalid bearer token")) << refused.err;
}

TEST(RunE2eTest, RunsStatusAndLogsInspectARun) {
  const std::string dir = roboloop::testing::MakeTempDir("run-inspect");
  const std::string root = dir + "/.roboloop";
  std::ofstream(dir + "/p.yaml") << "name: tiny\nstages:\n  - {name: demos, kind: collect, collect: {task: cartpole-swingup, episodes: 3}}\n";
  ProgramResult run = roboloop::testing::RunProgram(
      {roboloop::testing::RoboloopBinary(), "run", dir + "/p.yaml", "--root", root}, {}, dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string id = RunIdOf(run.out);
  EXPECT_THAT(roboloop::testing::RunProgram({roboloop::testing::RoboloopBinary(), "runs", "--root", root}).out,
              HasSubstr(id));
  EXPECT_THAT(StatusOf(root, ""), HasSubstr("demos"));
  ProgramResult logs = roboloop::testing::RunProgram({roboloop::testing::RoboloopBinary(), "logs", id, "demos", "--root", root});
  EXPECT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_THAT(logs.out, HasSubstr("finished: dataset="));
  ProgramResult again = roboloop::testing::RunProgram(
      {roboloop::testing::RoboloopBinary(), "run", dir + "/p.yaml", "--root", root}, {}, dir);
  EXPECT_THAT(StatusOf(root, RunIdOf(again.out)), HasSubstr("cached")) << "a second run reuses the first's collection";
  ProgramResult forced = roboloop::testing::RunProgram(
      {roboloop::testing::RoboloopBinary(), "run", dir + "/p.yaml", "--root", root, "--no-cache"}, {}, dir);
  EXPECT_THAT(StatusOf(root, RunIdOf(forced.out)), ::testing::Not(HasSubstr("cached")));
  ProgramResult bad = roboloop::testing::RunProgram({roboloop::testing::RoboloopBinary(), "logs", id, "nosuch", "--root", root});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("no stage 'nosuch'"));
}

}  // namespace
}  // namespace roboloop::cli
