// Fault injection, killed services (issue 25, requirement 3): a `roboloop run` of collect ->
// train -> evaluate against services running as separate processes, with the train service
// and the registry server SIGKILLed and restarted in the middle of training and the sim
// endpoint SIGKILLed and restarted in the middle of the evaluation. The run must retry or
// resume (stage retries, the train stage's resume point) and end with an evaluation equal,
// episode by episode and in its aggregates, to that of an undisturbed run.
#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/util/served_process.h"
#include "tests/util/subprocess.h"

namespace roboloop {
namespace {

using ::testing::HasSubstr;
using testing::ProgramResult;
using testing::ServedProcess;

const std::string kSource = ROBOLOOP_SOURCE_DIR;

// Every stage may be retried; training checkpoints every 50 of its 600 steps, so a killed
// training continues from its last checkpoint.
constexpr char kPipeline[] = R"(name: kill-test
stages:
  - name: demos
    kind: collect
    retries: 4
    backoff_s: 1
    collect: {task: cartpole-swingup, policy: expert, episodes: 6, max_steps: 100}
  - name: train
    kind: train
    retries: 4
    backoff_s: 1
    train:
      dataset: ${demos.dataset}
      model: kill-test
      policy: {kind: mlp, hidden: [32]}
      steps: 600
      batch_size: 16
      seed: 3
      checkpoint_every: 50
  - name: gate
    kind: evaluate
    retries: 4
    backoff_s: 1
    evaluate: {checkpoint: "${train.checkpoint}", protocol: cartpole-swingup-gate}
)";

// The four services of one store under `dir`, each on its own unix socket with one token.
class Services {
 public:
  explicit Services(const std::string& dir)
      : dir_(dir),
        registry({"serve", "registry", "--listen", Unix("registry"), "--root", dir + "/store",
                  "--token-file", Token()},
                 Socket("registry"), dir),
        sim({"serve", "sim", "--listen", Unix("sim"), "--token-file", Token(), "--registry",
             Unix("registry"), "--registry-token-file", Token(), "--root", dir + "/sim",
             "--dataset-dir", dir + "/sim/datasets"},
            Socket("sim"), dir),
        train({"serve", "train", "--listen", Unix("train"), "--token-file", Token(), "--registry",
               Unix("registry"), "--registry-token-file", Token(), "--root", TrainRoot()},
              Socket("train"), dir),
        eval({"serve", "eval", "--listen", Unix("eval"), "--token-file", Token(), "--registry",
              Unix("registry"), "--registry-token-file", Token(), "--root", dir + "/store",
              "--sim", Unix("sim"), "--sim-token-file", Token(), "--protocols-dir",
              kSource + "/configs/protocols"},
             Socket("eval"), dir) {
    std::ofstream(dir + "/services.yaml")
        << "registry: {address: \"" << Unix("registry") << "\", token_file: token}\n"
        << "train: {address: \"" << Unix("train") << "\", token_file: token}\n"
        << "eval: {address: \"" << Unix("eval") << "\", token_file: token}\n"
        << "sim:\n  - {address: \"" << Unix("sim") << "\", token_file: token}\n";
    std::ofstream(dir + "/p.yaml") << kPipeline;
  }

  // The `roboloop run` command of the pipeline against these services.
  std::vector<std::string> RunArgv() const {
    return {testing::RoboloopBinary(), "run", dir_ + "/p.yaml", "--services", dir_ + "/services.yaml",
            "--root", dir_ + "/runner", "--protocols-dir", kSource + "/configs/protocols"};
  }
  // Where the train service keeps its training runs (runs/<id>/train.jsonl).
  std::string TrainRoot() const { return dir_ + "/train"; }
  bool ready() const { return registry.ready() && sim.ready() && train.ready() && eval.ready(); }

 private:
  std::string Socket(const std::string& name) const { return dir_ + "/" + name + ".sock"; }
  std::string Unix(const std::string& name) const { return "unix:" + Socket(name); }
  std::string Token() const {
    std::ofstream(dir_ + "/token") << "kill-test-secret\n";
    return dir_ + "/token";
  }

  const std::string dir_;

 public:
  ServedProcess registry, sim, train, eval;
};

// The highest training step any run under `train_root` has logged (0 before the first).
int64_t StepsTrained(const std::string& train_root) {
  int64_t highest = 0;
  if (!std::filesystem::exists(train_root + "/runs")) return highest;
  for (const auto& run : std::filesystem::directory_iterator(train_root + "/runs")) {
    std::ifstream in(run.path() / "train.jsonl");
    for (std::string line; std::getline(in, line);) {
      const nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
      if (!record.is_object() || !record.contains("step")) continue;
      highest = std::max<int64_t>(highest, std::stoll(record["step"].value("step", std::string("0"))));
    }
  }
  return highest;
}

bool WaitUntil(const std::function<bool()>& done, int seconds) {
  for (int i = 0; i < seconds * 20; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

// The stored evaluation of kill-test@latest under the gate protocol in `dir`'s store, read
// back through the CLI (a cache hit: the run evaluated exactly that checkpoint).
nlohmann::json StoredEvaluation(const std::string& dir) {
  ProgramResult shown = testing::RunProgram(
      {testing::RoboloopBinary(), "eval", "kill-test@latest", "--protocol", "cartpole-swingup-gate",
       "--protocols-dir", kSource + "/configs/protocols", "--root", dir + "/store", "--format", "json"},
      {}, dir);
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  const size_t brace = shown.out.find('{');
  return brace == std::string::npos ? nlohmann::json() : nlohmann::json::parse(shown.out.substr(brace));
}

TEST(ServiceKillTest, RunSurvivesKilledServicesWithTheUndisturbedEvaluation) {
  const std::string calm_dir = testing::MakeTempDir("kill-calm");
  nlohmann::json calm;
  {
    Services services(calm_dir);
    ASSERT_TRUE(services.ready());
    ProgramResult run = testing::RunProgram(services.RunArgv(), {}, calm_dir);
    ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
    EXPECT_THAT(run.out, ::testing::Not(HasSubstr("retrying")));
  }
  calm = StoredEvaluation(calm_dir);

  const std::string dir = testing::MakeTempDir("kill-disturbed");
  nlohmann::json disturbed;
  {
    Services services(dir);
    ASSERT_TRUE(services.ready());
    testing::RunningProgram run = testing::StartProgram(services.RunArgv(), {}, dir);
    ASSERT_TRUE(WaitUntil([&] { return StepsTrained(services.TrainRoot()) >= 150; }, 300))
        << testing::ReadWholeFile(run.out_path) << testing::ReadWholeFile(run.err_path);
    services.train.Stop(SIGKILL);
    services.registry.Stop(SIGKILL);
    ASSERT_TRUE(services.registry.Restart());
    ASSERT_TRUE(services.train.Restart());

    ASSERT_TRUE(WaitUntil([&] { return testing::ReadWholeFile(run.out_path).find("> gate started") !=
                                       std::string::npos; }, 300))
        << testing::ReadWholeFile(run.out_path) << testing::ReadWholeFile(run.err_path);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_THAT(testing::ReadWholeFile(run.out_path), ::testing::Not(HasSubstr("= gate finished")))
        << "the sim endpoint must die in the middle of the evaluation";
    services.sim.Stop(SIGKILL);
    ASSERT_TRUE(services.sim.Restart());

    ProgramResult finished = testing::FinishProgram(run);
    ASSERT_EQ(finished.exit_code, 0) << finished.out << finished.err;
    EXPECT_THAT(finished.out, HasSubstr("train retrying")) << finished.out;
  }
  disturbed = StoredEvaluation(dir);

  ASSERT_TRUE(calm.contains("episodes") && disturbed.contains("episodes")) << calm << disturbed;
  EXPECT_EQ(disturbed["dataset_id"], calm["dataset_id"]);
  EXPECT_EQ(disturbed["episodes"].size(), 200u);
  EXPECT_EQ(disturbed["episodes"], calm["episodes"]);
  EXPECT_EQ(disturbed["aggregates"], calm["aggregates"]);
}

}  // namespace
}  // namespace roboloop
