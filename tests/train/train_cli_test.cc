// `roboloop train` end to end (issue 6, req 4, 6, 8, 9): data-parallel equivalence, exact
// resume after SIGKILL, a rank killed mid-run, the run's logs, bad input, the device option.
// The GPU variants (NCCL) run where LibTorch sees two CUDA devices and are skipped elsewhere.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <hdf5.h>
#include <nlohmann/json.hpp>

#include "tests/data/test_util.h"
#include "tests/util/free_port.h"
#include "tests/util/subprocess.h"
#include "train/run_log.h"
#include "train/safetensors.h"
#include "train/torch_runtime.h"

namespace roboloop::train {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::FreePort;
using testing::ProgramResult;
using testing::RoboloopBinary;
using testing::RunProgram;

// A small transformer, so that a step takes milliseconds.
constexpr char kConfig[] = R"(policy:
  kind: transformer
  history: 2
  chunk: 4
  d_model: 32
  layers: 2
  heads: 2
  ffn: 64
optimizer:
  lr: 0.001
  warmup_steps: 5
  clip_norm: 1.0
batch_size: 16
seed: 3
)";

// Largest per-tensor relative error ||a - b|| / ||b|| over two policy files.
double MaxRelativeError(const std::string& a_path, const std::string& b_path) {
  auto a = ReadSafetensors(a_path);
  auto b = ReadSafetensors(b_path);
  EXPECT_TRUE(a.ok() && b.ok());
  if (!a.ok() || !b.ok()) return INFINITY;
  EXPECT_EQ(a->size(), b->size());
  double worst = 0;
  for (const auto& [name, tensor] : *b) {
    const std::vector<float>& x = a->at(name).values;
    double diff = 0, norm = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      diff += (x[i] - tensor.values[i]) * static_cast<double>(x[i] - tensor.values[i]);
      norm += tensor.values[i] * static_cast<double>(tensor.values[i]);
    }
    worst = std::max(worst, std::sqrt(diff) / std::sqrt(norm));
  }
  return worst;
}

// CUDA devices LibTorch sees (0 with Debian's CPU-only LibTorch).
int CudaDevices() {
  absl::StatusOr<const TorchRuntime*> runtime = TorchRuntime::Load();
  if (!runtime.ok()) return 0;
  return nlohmann::json::parse((*runtime)->DescribeRuntime()).value("cuda_devices", 0);
}

class TrainCliTest : public ::testing::Test {
 protected:
  void ExpectSigkilledRunResumesWithBitwiseEqualLosses(const std::vector<std::string>& extra);
  static void SetUpTestSuite() {
    dir_ = new std::string(testing::MakeTempDir("train_cli"));
    for (const auto& [task, file] : {std::pair<const char*, const char*>{"cartpole-swingup", "/cartpole.hdf5"},
                                     {"pendulum-swingup", "/pendulum.hdf5"}}) {
      const ProgramResult collect = RunProgram({RoboloopBinary(), "sim", "collect", "--task", task, "--policy",
                                                "expert", "--episodes", "6", "--max-steps", "100", "-o",
                                                *dir_ + file});
      ASSERT_EQ(collect.exit_code, 0) << collect.err;
    }
    std::ofstream(*dir_ + "/config.yaml") << kConfig;
  }

  static std::string Dataset() { return *dir_ + "/cartpole.hdf5"; }
  static std::string Config() { return *dir_ + "/config.yaml"; }

  std::vector<std::string> Train(const std::string& root, std::vector<std::string> extra) {
    std::vector<std::string> argv = {RoboloopBinary(), "train", Config(), "--dataset", Dataset(), "--root", root};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }

  // The only run folder under root.
  static std::string RunDir(const std::string& root) {
    std::vector<std::string> runs;
    for (const auto& entry : fs::directory_iterator(root + "/runs")) runs.push_back(entry.path());
    EXPECT_EQ(runs.size(), 1u);
    return runs.empty() ? "" : runs[0];
  }

  // step -> loss from the run's JSONL (the last record of a step wins).
  static std::map<int64_t, double> Losses(const std::string& root) {
    std::map<int64_t, double> losses;
    std::ifstream in(RunDir(root) + "/train.jsonl");
    for (std::string line; std::getline(in, line);) {
      const nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
      if (record.is_object() && record.contains("step")) {
        losses[std::stoll(record["step"].value("step", std::string("0")))] = record["step"]["loss"].get<double>();
      }
    }
    return losses;
  }

  static bool LogHasStep(const std::string& root, int64_t step) {
    if (!fs::exists(root + "/runs")) return false;
    for (const auto& run : fs::directory_iterator(root + "/runs")) {
      std::ifstream in(run.path() / "train.jsonl");
      for (std::string line; std::getline(in, line);) {
        if (line.find("\"step\":\"" + std::to_string(step) + "\"") != std::string::npos) return true;
      }
    }
    return false;
  }

  static bool WaitForStep(const std::string& root, int64_t step, double seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      if (LogHasStep(root, step)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  // Trains 20 steps with 2 ranks of batch 8 and with 1 rank of batch 16 on `device` ("cpu":
  // Gloo; "cuda": one GPU per rank, NCCL); the final weights agree within 1e-5 per tensor.
  void ExpectTwoRanksMatchOneRank(const std::string& device) {
    const std::string two = testing::MakeTempDir("two"), one = testing::MakeTempDir("one");
    const ProgramResult a = RunProgram(Train(two, {"--nproc-per-node", "2", "--batch-size", "8",
                                                   "--steps", "20", "--device", device}));
    ASSERT_EQ(a.exit_code, 0) << a.err;
    const ProgramResult b = RunProgram(Train(one, {"--batch-size", "16", "--steps", "20", "--device", device}));
    ASSERT_EQ(b.exit_code, 0) << b.err;
    const std::string policy = "/checkpoints/step_20/policy.safetensors";
    const double error = MaxRelativeError(RunDir(two) + policy, RunDir(one) + policy);
    EXPECT_LE(error, 1e-5);
  }

  // Starts 2 ranks on `device` as torchrun would, kills rank 1 after step 5, and expects rank
  // 0 to fail with the step's error within 60 s.
  void ExpectKilledRankIsAClearErrorWithin60Seconds(const std::string& device) {
    // A free port may be taken by another process before rank 0 binds it: then rank 0 exits at
    // once and the job is started again on a new port.
    for (int attempt = 0; attempt < 3; ++attempt) {
      const std::string root = testing::MakeTempDir("rankkill");
      const std::string port = std::to_string(FreePort());
      const auto env = [&](int rank) {
        return std::vector<std::string>{"RANK=" + std::to_string(rank), "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1",
                                        "MASTER_PORT=" + port, "ROBOLOOP_RUN_ID=rank-kill"};
      };
      const std::vector<std::string> argv =
          Train(root, {"--steps", "1000000", "--rendezvous-timeout", "20", "--device", device});
      testing::RunningProgram rank0 = testing::StartProgram(argv, env(0));
      testing::RunningProgram rank1 = testing::StartProgram(argv, env(1));
      if (!WaitForStep(root, 5, 90)) {
        kill(rank0.pid, SIGKILL);
        kill(rank1.pid, SIGKILL);
        const ProgramResult failed0 = testing::FinishProgram(rank0);
        testing::FinishProgram(rank1);
        if (failed0.err.find("ddress already in use") != std::string::npos) continue;
        FAIL() << "the job never reached step 5; rank 0 said: " << failed0.err;
      }
      kill(rank1.pid, SIGKILL);
      const auto start = std::chrono::steady_clock::now();
      const ProgramResult survivor = testing::FinishProgram(rank0);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      testing::FinishProgram(rank1);
      EXPECT_NE(survivor.exit_code, 0);
      EXPECT_LT(seconds, 60);
      // The peer's death is seen by whichever collective of the step runs next: the gradients' or the loss's.
      EXPECT_THAT(survivor.err,
                  ::testing::ContainsRegex(
                      "step [0-9]+: (training step|averaging the (loss|gradients) across the ranks failed): "));
      return;
    }
    FAIL() << "three free ports were taken before rank 0 could bind them";
  }

  static std::string* dir_;
};

std::string* TrainCliTest::dir_ = nullptr;

TEST_F(TrainCliTest, TwoRanksOfBatchBMatchOneRankOfBatch2BAfter20Steps) {
  ExpectTwoRanksMatchOneRank("cpu");
}

TEST_F(TrainCliTest, TwoGpuRanksOverNcclMatchOneGpuRankOfBatch2B) {
  if (CudaDevices() < 2) GTEST_SKIP() << "needs 2 CUDA devices, LibTorch sees " << CudaDevices();
  ExpectTwoRanksMatchOneRank("cuda");
}

TEST_F(TrainCliTest, UnusableDeviceIsAClearErrorBeforeTraining) {
  const std::string root = testing::MakeTempDir("device");
  const ProgramResult tpu = RunProgram(Train(root, {"--device", "tpu"}));
  EXPECT_EQ(tpu.exit_code, 2);  // a usage error
  EXPECT_THAT(tpu.err, HasSubstr("device 'tpu' is not one of cpu, cuda, cuda:N, auto"));
  const std::string missing = "cuda:" + std::to_string(CudaDevices());
  const ProgramResult absent = RunProgram(Train(root, {"--device", missing}));
  EXPECT_EQ(absent.exit_code, 1);
  EXPECT_THAT(absent.err, HasSubstr("device " + missing + ": needs CUDA device"));
  EXPECT_THAT(absent.out, Not(HasSubstr("step 1 ")));
}

// --precision and --fp8-scaling reach the trainer (issue 22): FP8 trains on the CPU with tensorwise
// scales; rowwise there, and optimizer.bf16 next to another precision, stop before training.
TEST_F(TrainCliTest, PrecisionFlagsReachTheTrainer) {
  const std::string root = testing::MakeTempDir("precision");
  const ProgramResult fp8 = RunProgram(Train(root, {"--steps", "3", "--precision", "fp8"}));
  ASSERT_EQ(fp8.exit_code, 0) << fp8.err;
  EXPECT_EQ(Losses(root).size(), 3u);
  const ProgramResult rowwise = RunProgram(Train(root, {"--precision", "fp8", "--fp8-scaling", "rowwise"}));
  EXPECT_EQ(rowwise.exit_code, 1);
  EXPECT_THAT(rowwise.err, HasSubstr("fp8_scaling: rowwise runs on CUDA only"));
  EXPECT_THAT(rowwise.out, Not(HasSubstr("step 1 ")));
  const std::string config = testing::MakeTempDir("precision_config") + "/bf16.yaml";
  std::string with_bf16 = kConfig;
  with_bf16.insert(with_bf16.find("  clip_norm"), "  bf16: true\n");
  std::ofstream(config) << with_bf16 << "precision: fp8\n";
  const ProgramResult conflict = RunProgram({RoboloopBinary(), "train", config, "--dataset", Dataset(), "--root", root});
  EXPECT_EQ(conflict.exit_code, 1);
  EXPECT_THAT(conflict.err, HasSubstr("optimizer.bf16: true contradicts precision: fp8"));
}

TEST_F(TrainCliTest, RunWritesJsonlAndTensorBoardLogs) {
  const std::string root = testing::MakeTempDir("logs");
  const ProgramResult run = RunProgram(Train(root, {"--steps", "6", "--checkpoint-every", "3", "--model", "logged"}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("checkpoint logged:v1"));
  EXPECT_THAT(run.out, HasSubstr("checkpoint logged:v2"));
  const std::map<int64_t, double> losses = Losses(root);
  EXPECT_EQ(losses.size(), 6u);
  std::string events;
  for (const auto& entry : fs::directory_iterator(RunDir(root) + "/tensorboard")) events = entry.path();
  auto scalars = ReadTensorBoardScalars(events);
  ASSERT_TRUE(scalars.ok()) << scalars.status();
  int loss_points = 0;
  for (const TensorBoardScalar& s : *scalars) {
    if (s.tag == "train/loss") {
      ++loss_points;
      EXPECT_EQ(s.value, static_cast<float>(losses.at(s.step)));
    }
  }
  EXPECT_EQ(loss_points, 6);
  const std::string log = testing::ReadWholeFile(RunDir(root) + "/train.jsonl");
  EXPECT_THAT(log, HasSubstr("data_stall_pct"));
  // The whole run's data stall: in the finished event and in the summary line.
  const size_t finished = log.find("{\"finished\"");
  ASSERT_NE(finished, std::string::npos) << log;
  const nlohmann::json event = nlohmann::json::parse(log.substr(finished, log.find('\n', finished) - finished));
  const double stall = event["finished"].value("data_stall_pct", -1.0);
  EXPECT_GT(stall, 0.0) << event.dump();
  EXPECT_LT(stall, 100.0) << event.dump();
  EXPECT_THAT(run.out, HasSubstr(", data stall "));
}

// Trains 2000 steps straight and killed + resumed with `extra` flags; the losses must match.
void TrainCliTest::ExpectSigkilledRunResumesWithBitwiseEqualLosses(const std::vector<std::string>& extra) {
  // Long enough (a few seconds) that the kill lands mid-run however fast the machine is.
  std::vector<std::string> common = {"--steps", "2000", "--checkpoint-every", "10", "--model", "k"};
  common.insert(common.end(), extra.begin(), extra.end());
  const std::string straight = testing::MakeTempDir("straight"), killed = testing::MakeTempDir("killed");
  const ProgramResult full = RunProgram(Train(straight, common));
  ASSERT_EQ(full.exit_code, 0) << full.err;

  testing::RunningProgram victim = testing::StartProgram(Train(killed, common));
  ASSERT_TRUE(WaitForStep(killed, 25, 60)) << "the run never reached step 25";
  kill(victim.pid, SIGKILL);
  EXPECT_EQ(testing::FinishProgram(victim).exit_code, 128 + SIGKILL);
  ASSERT_FALSE(LogHasStep(killed, 2000)) << "the run finished before it was killed";

  std::vector<std::string> resume = common;
  resume.insert(resume.end(), {"--resume", "k@latest"});
  const ProgramResult resumed = RunProgram(Train(killed, resume));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const std::map<int64_t, double> expected = Losses(straight), actual = Losses(killed);
  ASSERT_EQ(actual.size(), 2000u);
  for (int64_t step = 1; step <= 2000; ++step) {
    EXPECT_EQ(actual.at(step), expected.at(step)) << "step " << step;
  }
}

TEST_F(TrainCliTest, SigkilledRunResumesWithBitwiseEqualLosses) { ExpectSigkilledRunResumesWithBitwiseEqualLosses({}); }

TEST_F(TrainCliTest, SigkilledStreamingRunResumesWithBitwiseEqualLosses) {
  // A 10 KiB data cache under the 14 KiB the 6 episodes take: they stream, a block each.
  ExpectSigkilledRunResumesWithBitwiseEqualLosses({"--data-cache-mb", "0.01"});
}

TEST_F(TrainCliTest, RankKilledMidRunGivesTheOtherAClearErrorWithin60Seconds) {
  ExpectKilledRankIsAClearErrorWithin60Seconds("cpu");
}

TEST_F(TrainCliTest, GpuRankKilledMidRunGivesTheOtherAClearErrorWithin60Seconds) {
  if (CudaDevices() < 2) GTEST_SKIP() << "needs 2 CUDA devices, LibTorch sees " << CudaDevices();
  ExpectKilledRankIsAClearErrorWithin60Seconds("cuda");
}

TEST_F(TrainCliTest, RendezvousTimeoutIsAClearErrorNotAHang) {
  const std::string root = testing::MakeTempDir("rdzv");
  const ProgramResult alone = RunProgram(
      Train(root, {"--rendezvous-timeout", "2"}),
      {"RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(FreePort())});
  EXPECT_EQ(alone.exit_code, 1);
  EXPECT_THAT(alone.err, HasSubstr("rendezvous at 127.0.0.1"));
  EXPECT_THAT(alone.err, HasSubstr("did not complete after "));
  EXPECT_THAT(alone.err, HasSubstr(" s (limit 2 s)"));
  EXPECT_THAT(alone.err, Not(HasSubstr("frame #")));
}

// --resume continues the checkpoint's own run: its model, steps and batch unless given, and a flag
// that contradicts it, or a step count it already reached, is an error before anything is registered.
TEST_F(TrainCliTest, ResumeContinuesTheCheckpointsRun) {
  const std::string root = testing::MakeTempDir("resume_run");
  const ProgramResult first = RunProgram(Train(root, {"--steps", "4", "--checkpoint-every", "2", "--model", "a"}));
  ASSERT_EQ(first.exit_code, 0) << first.err;

  const ProgramResult reached = RunProgram(Train(root, {"--resume", "a:v1", "--steps", "2"}));
  EXPECT_EQ(reached.exit_code, 1);
  EXPECT_THAT(reached.err, HasSubstr("checkpoint a:v1 is at step 2, at or beyond steps (--steps) 2"));
  const ProgramResult batch = RunProgram(Train(root, {"--resume", "a:v1", "--batch-size", "8"}));
  EXPECT_EQ(batch.exit_code, 1);
  EXPECT_THAT(batch.err, HasSubstr("--batch-size 8 contradicts checkpoint a:v1 (batch_size 16)"));
  const ProgramResult kind = RunProgram(Train(root, {"--resume", "a:v1", "--policy", "mlp"}));
  EXPECT_EQ(kind.exit_code, 1);
  EXPECT_THAT(kind.err, HasSubstr("--policy \"mlp\" contradicts checkpoint a:v1 (policy.kind \"transformer\")"));
  const ProgramResult model = RunProgram(Train(root, {"--resume", "a:v1", "--model", "b"}));
  EXPECT_EQ(model.exit_code, 1);
  EXPECT_THAT(model.err, HasSubstr("--model \"b\" contradicts checkpoint a:v1"));
  const ProgramResult fine_tune = RunProgram(Train(root, {"--init-from", "a:v1", "--policy", "mlp", "--model", "c"}));
  EXPECT_EQ(fine_tune.exit_code, 1);
  EXPECT_THAT(fine_tune.err, HasSubstr("--policy \"mlp\" contradicts checkpoint a:v1"));
  const ProgramResult versions = RunProgram({RoboloopBinary(), "registry", "show", "a:v3", "--root", root});
  EXPECT_NE(versions.exit_code, 0) << "a refused resume registered a:v3";

  // No --model, no --steps: the run goes on under model a to its own 4 steps.
  const std::vector<std::string> bare = {RoboloopBinary(), "train", "--dataset", Dataset(), "--root", root,
                                         "--resume", "a:v1"};
  const ProgramResult resumed = RunProgram(bare);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_THAT(resumed.out, HasSubstr("checkpoint a:v3"));
  EXPECT_THAT(resumed.out, HasSubstr("(step 4)"));
  EXPECT_THAT(resumed.out, HasSubstr("after 4 steps"));
}

// QA: `--resume REF` without --dataset read the dataset path REF's run recorded, so a relative path run from
// another folder, or a file moved since, was "dataset file ... does not exist". It trains on REF's registered dataset.
TEST_F(TrainCliTest, ResumeWithoutDatasetTrainsOnTheCheckpointsRegisteredDataset) {
  const std::string root = testing::MakeTempDir("resume_moved"), moved = testing::MakeTempDir("moved") + "/d.hdf5";
  fs::copy_file(Dataset(), moved);
  const std::vector<std::string> first = {RoboloopBinary(), "train", Config(), "--dataset", moved, "--root", root,
                                          "--steps", "4", "--checkpoint-every", "2", "--model", "m"};
  const ProgramResult trained = RunProgram(first);
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
  fs::remove(moved);
  const ProgramResult resumed = RunProgram({RoboloopBinary(), "train", "--root", root, "--resume", "m:v1"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_THAT(resumed.out, HasSubstr("after 4 steps"));
}

// QA: resuming a two-rank run with --nproc-per-node 2 started a new run (its logs in a second runs/ folder)
// instead of continuing the checkpoint's.
TEST_F(TrainCliTest, ResumedTwoRankRunContinuesTheCheckpointsRun) {
  const std::string root = testing::MakeTempDir("resume_two_ranks");
  const ProgramResult first = RunProgram(
      Train(root, {"--steps", "4", "--checkpoint-every", "2", "--model", "d", "--nproc-per-node", "2"}));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string run = fs::path(RunDir(root)).filename();
  const ProgramResult resumed = RunProgram(Train(root, {"--resume", "d:v1", "--nproc-per-node", "2"}));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_THAT(resumed.out, HasSubstr("finished run " + run + " after 4 steps"));
  EXPECT_EQ(fs::path(RunDir(root)).filename(), run);
}

// A streamed run resumed with a cache its data fits in goes on streaming, and its log says why.
TEST_F(TrainCliTest, ResumedStreamingRunSaysWhyItStillStreams) {
  const std::string root = testing::MakeTempDir("resume_stream");
  const ProgramResult first =
      RunProgram(Train(root, {"--steps", "4", "--checkpoint-every", "2", "--model", "s", "--data-cache-mb", "0.01"}));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_THAT(first.err, HasSubstr("exceed the data cache of 10485 bytes (--data-cache-mb): streaming"));
  const ProgramResult resumed = RunProgram(Train(root, {"--resume", "s:v1", "--data-cache-mb", "64"}));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  // QA: the log claimed the data exceeded the 64 MiB cache.
  EXPECT_THAT(resumed.err, HasSubstr("fit the data cache of 67108864 bytes, but the resumed run streamed them"));
  EXPECT_THAT(resumed.err, Not(HasSubstr("exceed the data cache")));
}

// Ctrl-C is exit 130 with one line naming the checkpoint to resume, with one rank and with two.
TEST_F(TrainCliTest, CancelledRunExits130WithTheCheckpointToResume) {
  for (const char* ranks : {"1", "2"}) {
    const std::string root = testing::MakeTempDir("cancel");
    testing::RunningProgram run = testing::StartProgram(
        Train(root, {"--steps", "1000000", "--batch-size", "8", "--model", "cc", "--nproc-per-node", ranks}));
    ASSERT_TRUE(WaitForStep(root, 5, 90)) << "the run never reached step 5";
    kill(run.pid, SIGINT);
    const ProgramResult cancelled = testing::FinishProgram(run);
    EXPECT_EQ(cancelled.exit_code, 130) << ranks << " ranks: " << cancelled.err;
    EXPECT_THAT(cancelled.err, HasSubstr("resume with --resume "));
    EXPECT_THAT(cancelled.err, Not(HasSubstr("resume with --resume \n")));
    EXPECT_THAT(cancelled.err, Not(HasSubstr("failed")));
  }
}

// QA: when rank 1 failed, the launcher blamed rank 0, which exited first because its collective broke. Rank 1
// cannot open its sample trace (a folder stands in its place): the launcher names rank 1 and its error, and rank
// 0 as a consequence.
TEST_F(TrainCliTest, TheLauncherNamesTheRankThatFailedAndItsError) {
  const std::string root = testing::MakeTempDir("rank1fails"), trace = testing::MakeTempDir("trace");
  fs::create_directories(trace + "/rank-1.tsv");
  const ProgramResult run = RunProgram(Train(root, {"--steps", "20", "--batch-size", "8", "--nproc-per-node", "2"}),
                                       {"ROBOLOOP_SAMPLE_TRACE=" + trace});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("training failed: rank 1 of 2 exited with code 1: cannot open the sample trace " +
                                 trace + "/rank-1.tsv"));
  EXPECT_THAT(run.err, Not(HasSubstr("training failed: rank 0")));
}

// QA's case: with the data streamed (--data-cache-mb 1), the rank that reads a corrupt image chunk fails;
// its peer's collective breaks and it may exit first. The launcher names the rank that read the chunk and the
// chunk's error, whichever exits first.
TEST_F(TrainCliTest, ACorruptImageChunkIsBlamedOnTheRankThatReadIt) {
  const std::string root = testing::MakeTempDir("corruptchunk");
  const std::string dataset = root + "/corrupt-img.hdf5";
  const ProgramResult collect = RunProgram({RoboloopBinary(), "sim", "collect", "--task", "reach-vision", "--policy",
                                            "expert", "--episodes", "8", "-o", dataset, "--root", root});
  ASSERT_EQ(collect.exit_code, 0) << collect.err;
  ASSERT_NO_FATAL_FAILURE(data::testing::CorruptChunk(dataset, "data/demo_5/obs/top_image", 10));
  std::ofstream(root + "/vis.yaml") << "policy: {kind: mlp, history: 1, chunk: 4, hidden: [64, 64]}\n"
                                       "batch_size: 8\nseed: 3\n";
  const ProgramResult run =
      RunProgram({RoboloopBinary(), "train", root + "/vis.yaml", "--dataset", dataset, "--root", root, "--steps",
                  "100", "--data-cache-mb", "1", "--nproc-per-node", "2"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, ::testing::ContainsRegex("training failed: rank [01] of 2 exited with code 1: /"));
  EXPECT_THAT(run.err, HasSubstr("exited with code 1: " + dataset +
                                 ": data/demo_5/obs/top_image: frame 10: corrupt chunk (not a zlib stream); then, as a "
                                 "consequence, rank "));
}

// Usage errors exit 2 and name the flag; a folder given as the config file is named.
TEST_F(TrainCliTest, UsageErrorsExit2NamingTheFlag) {
  const std::string root = testing::MakeTempDir("usage");
  for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{
           {"--steps", "0"}, {"--lr", "nan"}, {"--lr", "1e400"}, {"--batch-size", "0"}, {"--nproc-per-node", "1000"},
           {"--rendezvous-timeout", "nan"}, {"--data-cache-mb", "nan"}, {"--precision", "fp16"}}) {
    const ProgramResult refused = RunProgram(Train(root, {flag, value}));
    EXPECT_EQ(refused.exit_code, 2) << flag << " " << value << ": " << refused.err;
    EXPECT_THAT(refused.err, HasSubstr(flag)) << value;
  }
  const ProgramResult no_dataset = RunProgram({RoboloopBinary(), "train", Config(), "--root", root});
  EXPECT_EQ(no_dataset.exit_code, 2) << no_dataset.err;
  EXPECT_THAT(no_dataset.err, HasSubstr("training needs a dataset"));
  const ProgramResult both = RunProgram(Train(root, {"--resume", "a:v1", "--init-from", "a:v2"}));
  EXPECT_EQ(both.exit_code, 2) << both.err;
  EXPECT_THAT(both.err, HasSubstr("--resume and --init-from exclude each other"));
  const ProgramResult folder =
      RunProgram({RoboloopBinary(), "train", root, "--dataset", Dataset(), "--root", root, "--steps", "2"});
  EXPECT_EQ(folder.exit_code, 1) << folder.err;
  EXPECT_THAT(folder.err, HasSubstr(root + ": is a directory, expected a YAML file"));
}

TEST_F(TrainCliTest, BadInputIsAClearErrorBeforeTraining) {
  const std::string root = testing::MakeTempDir("bad");
  const ProgramResult unknown = RunProgram(Train(root, {"--policy", "diffusion"}));
  EXPECT_EQ(unknown.exit_code, 2) << "a usage error";
  EXPECT_THAT(unknown.err, HasSubstr("--policy: unknown policy kind 'diffusion' (known: mlp, transformer)"));

  const ProgramResult bad_ref = RunProgram(Train(root, {"--resume", "nosuch@latest"}));
  EXPECT_EQ(bad_ref.exit_code, 1);
  EXPECT_THAT(bad_ref.err, HasSubstr("nosuch@latest"));

  const ProgramResult trained = RunProgram(Train(root, {"--steps", "2", "--model", "cp"}));
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
  std::vector<std::string> mismatch = {RoboloopBinary(), "train", Config(), "--dataset", *dir_ + "/pendulum.hdf5",
                                       "--root", root, "--init-from", "cp@latest", "--steps", "2"};
  const ProgramResult wrong_dims = RunProgram(mismatch);
  EXPECT_EQ(wrong_dims.exit_code, 1);
  EXPECT_THAT(wrong_dims.err, HasSubstr("dataset " + *dir_ + "/pendulum.hdf5: checkpoint cp@latest reads obs_dim"));
  EXPECT_THAT(wrong_dims.err, HasSubstr("but the dataset has obs_dim"));

  // Corrupt the stored policy blob of cp:v1: fetching it must fail on its digest.
  fs::remove_all(root + "/cache");
  for (const auto& entry : fs::recursive_directory_iterator(root + "/blobs")) {
    if (!entry.is_regular_file() || entry.file_size() > 1 << 20 || entry.file_size() < 1000) continue;
    std::fstream blob(entry.path(), std::ios::in | std::ios::out | std::ios::binary);
    blob.seekp(200);
    blob.put('\x7f');
  }
  const ProgramResult corrupt = RunProgram(Train(root, {"--init-from", "cp@latest", "--steps", "2"}));
  EXPECT_EQ(corrupt.exit_code, 1);
  EXPECT_THAT(corrupt.err, HasSubstr("cp@latest"));
  EXPECT_THAT(corrupt.out, Not(HasSubstr("step 1 ")));

  // A dataset file that crashes libhdf5 (docs/RELIABILITY.md) is checked in a child process before it is read or
  // registered: a clear error naming it, and the registry keeps no record of it.
  const std::string hostile = std::string(ROBOLOOP_THIRD_PARTY_FINDINGS) + "/hdf5_h5hg_read_memcpy_overlap.hdf5";
  const ProgramResult crashing = RunProgram(
      {RoboloopBinary(), "train", Config(), "--dataset", hostile, "--root", root, "--steps", "2"});
  EXPECT_EQ(crashing.exit_code, 1);
  EXPECT_THAT(crashing.err, HasSubstr(hostile + ": validation "));
  EXPECT_THAT(crashing.err, HasSubstr("the file is likely corrupt"));
  const ProgramResult datasets = RunProgram({RoboloopBinary(), "registry", "ls", "--datasets", "--root", root});
  EXPECT_EQ(datasets.exit_code, 0) << datasets.err;
  EXPECT_THAT(datasets.out, Not(HasSubstr("memcpy")));

  // The same file uploaded as a registry dataset by a client (`registry put` stores any file) is checked too.
  const ProgramResult put =
      RunProgram({RoboloopBinary(), "registry", "put", hostile, "--dataset", "uploaded", "--root", root});
  ASSERT_EQ(put.exit_code, 0) << put.err;
  const ProgramResult registered = RunProgram(
      {RoboloopBinary(), "train", Config(), "--dataset", "uploaded:v1", "--root", root, "--steps", "2"});
  EXPECT_EQ(registered.exit_code, 1);
  EXPECT_THAT(registered.err, HasSubstr("dataset uploaded:v1: "));
  EXPECT_THAT(registered.err, HasSubstr("the file is likely corrupt"));
}

// QA: fine-tuning a checkpoint registered from a policy file without --normalization failed with
// "normalization: missing object 'obs'", naming no checkpoint; resuming it said the same instead of its missing state.
TEST_F(TrainCliTest, ACheckpointWithoutNormalizationOrStateIsNamedWhenTrainingStartsFromIt) {
  const std::string root = testing::MakeTempDir("no_stats");
  const ProgramResult trained = RunProgram(Train(root, {"--steps", "2", "--model", "base"}));
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
  const ProgramResult shown = RunProgram({RoboloopBinary(), "registry", "show", "base:v1", "--root", root});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  std::string policy_sha;
  const nlohmann::json checkpoint = nlohmann::json::parse(shown.out);
  for (const auto& blob : checkpoint["blobs"]) {
    if (blob["role"] == "policy") policy_sha = blob["sha256"];
  }
  ASSERT_EQ(policy_sha.size(), 64u);
  const std::string policy_file = root + "/p.safetensors";
  fs::copy_file(root + "/blobs/" + policy_sha.substr(0, 2) + "/" + policy_sha.substr(2, 2) + "/" + policy_sha,
                policy_file);
  const ProgramResult put = RunProgram({RoboloopBinary(), "registry", "put", "--model", "pf", "--policy-file",
                                        policy_file, "--task", "cartpole-swingup", "--kind", "transformer",
                                        "--options", R"({"history": 2, "chunk": 4, "d_model": 32, "layers": 2,
                                        "heads": 2, "ffn": 64})", "--root", root});
  ASSERT_EQ(put.exit_code, 0) << put.err;
  const ProgramResult fine_tune = RunProgram(Train(root, {"--init-from", "pf:v1", "--steps", "2", "--model", "ft"}));
  EXPECT_EQ(fine_tune.exit_code, 1);
  EXPECT_THAT(fine_tune.err, HasSubstr("checkpoint pf:v1 records no normalization statistics to fine-tune from"));
  const ProgramResult resume = RunProgram(Train(root, {"--resume", "pf:v1", "--steps", "4"}));
  EXPECT_EQ(resume.exit_code, 1);
  EXPECT_THAT(resume.err, HasSubstr("checkpoint pf:v1 has no trainer_state to resume from"));
}

// Sets the first action of the first demo of the dataset at `path` to NaN.
void PutNaNAction(const std::string& path) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  const hid_t actions = H5Dopen2(file, "data/demo_0/actions", H5P_DEFAULT);
  const hid_t space = H5Dget_space(actions);
  const hsize_t start[2] = {0, 0}, count[2] = {1, 1};
  H5Sselect_hyperslab(space, H5S_SELECT_SET, start, nullptr, count, nullptr);
  const hid_t one = H5Screate_simple(2, count, nullptr);
  const float nan = NAN;
  EXPECT_GE(H5Dwrite(actions, H5T_NATIVE_FLOAT, one, space, H5P_DEFAULT, &nan), 0);
  H5Sclose(one);
  H5Sclose(space);
  H5Dclose(actions);
  H5Fclose(file);
}

// QA: a set of files with different obs features, and a file with a NaN action, were refused but registered first
// (datasets "cartpole", "pendulum", "cartpole-set" and "nan"), though `data register` refuses such a file.
TEST_F(TrainCliTest, DataThatTrainingRefusesIsNotRegistered) {
  const std::string root = testing::MakeTempDir("refused"), nan = testing::MakeTempDir("nan") + "/nan.hdf5";
  const ProgramResult mixed = RunProgram(
      {RoboloopBinary(), "train", Config(), "--dataset", Dataset(), "--dataset", *dir_ + "/pendulum.hdf5", "--root",
       root, "--steps", "2"});
  EXPECT_EQ(mixed.exit_code, 1);
  EXPECT_THAT(mixed.err, HasSubstr("pendulum.hdf5: trains on obs features"));
  fs::copy_file(Dataset(), nan);
  PutNaNAction(nan);
  const ProgramResult not_finite =
      RunProgram({RoboloopBinary(), "train", Config(), "--dataset", nan, "--root", root, "--steps", "2"});
  EXPECT_EQ(not_finite.exit_code, 1);
  EXPECT_THAT(not_finite.err, HasSubstr("data/demo_0/actions: 1 NaN/Inf values"));
  const ProgramResult datasets =
      RunProgram({RoboloopBinary(), "registry", "ls", "--datasets", "--format", "json", "--root", root});
  ASSERT_EQ(datasets.exit_code, 0) << datasets.err;
  EXPECT_THAT(datasets.out, Not(HasSubstr("\"name\"")));
  const ProgramResult trained = RunProgram(Train(root, {"--steps", "2"}));
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
  const ProgramResult registered =
      RunProgram({RoboloopBinary(), "registry", "ls", "--datasets", "--format", "json", "--root", root});
  EXPECT_THAT(registered.out, HasSubstr("\"name\": \"cartpole\""));
}

}  // namespace
}  // namespace roboloop::train
