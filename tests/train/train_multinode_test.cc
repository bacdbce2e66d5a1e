// `roboloop train` as two nodes of one rank each run it (issue 28, req 2): each "node" runs its
// own process as torchrun starts it there (RANK 0 and 1, WORLD_SIZE 2, LOCAL_RANK 0 on both,
// LOCAL_WORLD_SIZE 1), both reading a registered dataset through a shared --root (its cache) and
// a registry server, the dataset streaming through a data cache smaller than it. The ranks'
// sample traces (ROBOLOOP_SAMPLE_TRACE) show every window trained on once per epoch and no
// episode used by both ranks in an epoch; their logs show each episode read about once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <utility>

#include "data/dataset_reader.h"
#include "tests/util/free_port.h"
#include "tests/util/served_process.h"
#include "tests/util/subprocess.h"

namespace roboloop::train {
namespace {

using ::testing::HasSubstr;
using testing::ProgramResult;
using testing::RoboloopBinary;
using testing::RunProgram;
using Window = std::pair<int64_t, int64_t>;  // (episode, t)

constexpr int kEpisodes = 8;
constexpr int kSteps = 20;        // every episode's length: 160 windows, 80 a rank
constexpr int kBatch = 8;         // a rank's batch: 10 batches an epoch
constexpr int kStepsPerEpoch = kEpisodes * kSteps / (2 * kBatch);
constexpr int kEpochs = 2;

constexpr char kConfig[] = R"(policy:
  kind: mlp
  history: 2
  chunk: 2
optimizer:
  lr: 0.001
seed: 7
)";

// step -> the windows one rank's trace lists for it.
std::map<int64_t, std::vector<Window>> ReadTrace(const std::string& path) {
  std::map<int64_t, std::vector<Window>> steps;
  std::ifstream in(path);
  int64_t step = 0, episode = 0, t = 0;
  while (in >> step >> episode >> t) steps[step].emplace_back(episode, t);
  return steps;
}

// The episodes a rank says it read, from its closing log line.
int64_t EpisodesRead(const ProgramResult& rank, int index) {
  const std::regex line("rank " + std::to_string(index) + " of 2: read ([0-9]+) episodes");
  std::smatch match;
  const std::string output = rank.out + rank.err;
  return std::regex_search(output, match, line) ? std::stoll(match[1]) : -1;
}

TEST(TrainMultiNodeTest, TwoNodesOfOneRankEachShareEveryEpochThroughASharedFolder) {
  const std::string shared = testing::MakeTempDir("multinode");
  const std::string socket = shared + "/registry.sock";
  testing::ServedProcess registry({"serve", "registry", "--listen", "unix:" + socket, "--root", shared + "/store"},
                                  socket, shared);
  ASSERT_TRUE(registry.ready());
  const std::string demos = shared + "/demos.hdf5";
  const ProgramResult collect =
      RunProgram({RoboloopBinary(), "sim", "collect", "--task", "cartpole-swingup", "--policy", "expert", "--episodes",
                  std::to_string(kEpisodes), "--max-steps", std::to_string(kSteps), "-o", demos});
  ASSERT_EQ(collect.exit_code, 0) << collect.err;
  {
    data::DatasetReader::Options options;
    options.path = demos;
    absl::StatusOr<std::unique_ptr<data::DatasetReader>> reader = data::DatasetReader::Open(options);
    ASSERT_TRUE(reader.ok()) << reader.status();
    ASSERT_EQ((*reader)->layout().demos.size(), size_t{kEpisodes});
    for (const data::DemoLayout& demo : (*reader)->layout().demos) ASSERT_EQ(demo.num_samples, kSteps) << demo.name;
  }
  const ProgramResult registered = RunProgram(
      {RoboloopBinary(), "data", "register", demos, "--name", "demos", "--registry", "unix:" + socket});
  ASSERT_EQ(registered.exit_code, 0) << registered.err;
  std::ofstream(shared + "/config.yaml") << kConfig;

  // What each node runs: the same command, in its own working folder, with the shared root.
  const std::vector<std::string> argv = {
      RoboloopBinary(), "train", shared + "/config.yaml", "--dataset", "demos:v1", "--registry", "unix:" + socket,
      "--root", shared + "/root", "--batch-size", std::to_string(kBatch), "--steps",
      std::to_string(kEpochs * kStepsPerEpoch), "--data-cache-mb", "0.001", "--rendezvous-timeout", "30"};
  ProgramResult node0, node1;
  // A free port may be taken before rank 0 binds it: then the job is started again on another.
  for (int attempt = 0; attempt < 3; ++attempt) {
    const std::string port = std::to_string(testing::FreePort());
    const auto env = [&](int rank) {
      return std::vector<std::string>{"RANK=" + std::to_string(rank), "WORLD_SIZE=2", "LOCAL_RANK=0",
                                      "LOCAL_WORLD_SIZE=1", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + port,
                                      "ROBOLOOP_SAMPLE_TRACE=" + shared + "/trace-" + std::to_string(attempt)};
    };
    std::vector<std::string> cwd;
    for (int node = 0; node < 2; ++node) {
      cwd.push_back(shared + "/node" + std::to_string(node) + "-" + std::to_string(attempt));
      std::filesystem::create_directories(cwd.back());
    }
    testing::RunningProgram rank0 = testing::StartProgram(argv, env(0), cwd[0]);
    testing::RunningProgram rank1 = testing::StartProgram(argv, env(1), cwd[1]);
    node0 = testing::FinishProgram(rank0);
    node1 = testing::FinishProgram(rank1);
    if (node0.exit_code != 0 && node0.err.find("ddress already in use") != std::string::npos) continue;
    ASSERT_EQ(node0.exit_code, 0) << node0.err;
    ASSERT_EQ(node1.exit_code, 0) << node1.err;
    const std::string trace = shared + "/trace-" + std::to_string(attempt);
    const std::map<int64_t, std::vector<Window>> rank0_steps = ReadTrace(trace + "/rank-0.tsv");
    const std::map<int64_t, std::vector<Window>> rank1_steps = ReadTrace(trace + "/rank-1.tsv");
    ASSERT_EQ(rank0_steps.size(), size_t{kEpochs * kStepsPerEpoch});
    ASSERT_EQ(rank1_steps.size(), size_t{kEpochs * kStepsPerEpoch});
    for (int epoch = 0; epoch < kEpochs; ++epoch) {
      std::multiset<Window> windows;
      std::set<int64_t> episodes0, episodes1;
      for (int64_t step = epoch * kStepsPerEpoch + 1; step <= (epoch + 1) * kStepsPerEpoch; ++step) {
        for (const Window& w : rank0_steps.at(step)) windows.insert(w), episodes0.insert(w.first);
        for (const Window& w : rank1_steps.at(step)) windows.insert(w), episodes1.insert(w.first);
      }
      std::multiset<Window> every;
      for (int64_t e = 0; e < kEpisodes; ++e) {
        for (int64_t t = 0; t < kSteps; ++t) every.emplace(e, t);
      }
      EXPECT_EQ(windows, every) << "epoch " << epoch << ": not every window once";
      std::vector<int64_t> both;
      std::set_intersection(episodes0.begin(), episodes0.end(), episodes1.begin(), episodes1.end(),
                            std::back_inserter(both));
      EXPECT_TRUE(both.empty()) << "epoch " << epoch << ": both ranks used episode " << both.front();
    }
    // While training, each episode read by one rank once an epoch (a cache of 2 episodes keeps
    // none for the next); the loader may have read up to 2 of a rank's next-epoch episodes
    // already (4 batches prefetched and 1 staged: 40 windows).
    const int64_t read0 = EpisodesRead(node0, 0), read1 = EpisodesRead(node1, 1);
    EXPECT_GE(read0, kEpochs * kEpisodes / 2) << node0.err;
    EXPECT_GE(read1, kEpochs * kEpisodes / 2) << node1.err;
    EXPECT_LE(read0 + read1, kEpochs * kEpisodes + 2 * 2) << node0.err << node1.err;
    EXPECT_THAT(node0.out + node0.err, HasSubstr("streaming"));
    // Under the shared root: rank 0's run alone, and one whole copy of the dataset that both
    // ranks fetched into the cache.
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(shared + "/root/runs"),
                            std::filesystem::directory_iterator()),
              1);
    std::vector<std::string> cached;
    for (const auto& entry : std::filesystem::directory_iterator(shared + "/root/cache")) {
      cached.push_back(entry.path().filename().string());
    }
    EXPECT_THAT(cached, ::testing::ElementsAre(::testing::EndsWith(".hdf5")));
    return;
  }
  FAIL() << "three free ports were taken before rank 0 could bind them";
}

}  // namespace
}  // namespace roboloop::train
