// `roboloop train` as two nodes of one rank each run it (issue 28, req 2): each "node" runs its
// own process as torchrun starts it there (RANK 0 and 1, WORLD_SIZE 2, LOCAL_RANK 0 on both,
// LOCAL_WORLD_SIZE 1), both reading a registered dataset through a shared --root (its cache) and
// a registry server, the dataset streaming through a data cache smaller than it. The ranks'
// sample traces (ROBOLOOP_SAMPLE_TRACE) show every window trained on once per epoch and no
// episode used by both ranks in an epoch; their logs show each episode read about once.
// The job runs twice: with both nodes on this host's loopback, and with each node on a network
// of its own (a namespace), the two joined by a link, as two machines are.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <thread>
#include <utility>

#include "data/dataset_reader.h"
#include "tests/util/free_port.h"
#include "tests/util/served_process.h"
#include "tests/util/subprocess.h"
#include "tests/util/two_host_link.h"

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

// How the test reaches the job's two nodes.
struct Nodes {
  std::string shared;    // the folder both nodes see (the registry's store, --root, the traces)
  std::string registry;  // the registry's address as both nodes dial it
  std::string master_addr;
  // `argv` as node `node` runs it.
  std::function<std::vector<std::string>(int node, const std::vector<std::string>& argv)> on_node;
};

// Collects the demonstrations, checks their shape and registers them as `demos` (on node 0).
void RegisterDemos(const Nodes& nodes) {
  const std::string demos = nodes.shared + "/demos.hdf5";
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
  }  // closed before registering: HDF5 locks the file while it is open
  const ProgramResult registered = RunProgram(
      nodes.on_node(0, {RoboloopBinary(), "data", "register", demos, "--name", "demos", "--registry", nodes.registry}));
  ASSERT_EQ(registered.exit_code, 0) << registered.err;
  std::ofstream(nodes.shared + "/config.yaml") << kConfig;
}

// Both nodes' results of one run of the job.
struct JobResult {
  ProgramResult node[2];
  std::string trace;  // the folder of the ranks' sample traces
};

// Starts the same command on both nodes, as torchrun would there, and waits for both.
JobResult RunJob(const Nodes& nodes, const std::string& port, const std::string& tag) {
  const std::vector<std::string> argv = {
      RoboloopBinary(), "train", nodes.shared + "/config.yaml", "--dataset", "demos:v1", "--registry", nodes.registry,
      "--root", nodes.shared + "/root", "--batch-size", std::to_string(kBatch), "--steps",
      std::to_string(kEpochs * kStepsPerEpoch), "--data-cache-mb", "0.001", "--rendezvous-timeout", "30"};
  JobResult job;
  job.trace = nodes.shared + "/trace-" + tag;
  testing::RunningProgram running[2];
  for (int node = 0; node < 2; ++node) {
    const std::vector<std::string> env = {
        "RANK=" + std::to_string(node), "WORLD_SIZE=2", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=1",
        "MASTER_ADDR=" + nodes.master_addr, "MASTER_PORT=" + port, "ROBOLOOP_SAMPLE_TRACE=" + job.trace};
    const std::string cwd = nodes.shared + "/node" + std::to_string(node) + "-" + tag;
    std::filesystem::create_directories(cwd);
    running[node] = testing::StartProgram(nodes.on_node(node, argv), env, cwd);
  }
  for (int node = 0; node < 2; ++node) job.node[node] = testing::FinishProgram(running[node]);
  return job;
}

bool PortWasTaken(const JobResult& job) {
  return job.node[0].exit_code != 0 && job.node[0].err.find("ddress already in use") != std::string::npos;
}

// Every window trained on once per epoch, by one rank or the other, and no episode by both.
void ExpectEveryWindowOncePerEpoch(const JobResult& job) {
  const std::map<int64_t, std::vector<Window>> rank0_steps = ReadTrace(job.trace + "/rank-0.tsv");
  const std::map<int64_t, std::vector<Window>> rank1_steps = ReadTrace(job.trace + "/rank-1.tsv");
  ASSERT_EQ(rank0_steps.size(), size_t{kEpochs * kStepsPerEpoch});
  ASSERT_EQ(rank1_steps.size(), size_t{kEpochs * kStepsPerEpoch});
  std::multiset<Window> every;
  for (int64_t e = 0; e < kEpisodes; ++e) {
    for (int64_t t = 0; t < kSteps; ++t) every.emplace(e, t);
  }
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    std::multiset<Window> windows;
    std::set<int64_t> episodes0, episodes1;
    for (int64_t step = epoch * kStepsPerEpoch + 1; step <= (epoch + 1) * kStepsPerEpoch; ++step) {
      for (const Window& w : rank0_steps.at(step)) windows.insert(w), episodes0.insert(w.first);
      for (const Window& w : rank1_steps.at(step)) windows.insert(w), episodes1.insert(w.first);
    }
    EXPECT_EQ(windows, every) << "epoch " << epoch << ": not every window once";
    std::vector<int64_t> both;
    std::set_intersection(episodes0.begin(), episodes0.end(), episodes1.begin(), episodes1.end(),
                          std::back_inserter(both));
    EXPECT_TRUE(both.empty()) << "epoch " << epoch << ": both ranks used episode " << both.front();
  }
}

// While training, each episode read by one rank once an epoch (a cache of 2 episodes keeps none
// for the next); the loader may have read up to 2 of a rank's next-epoch episodes already
// (4 batches prefetched and 1 staged: 40 windows).
void ExpectEachEpisodeReadAboutOnce(const JobResult& job) {
  const int64_t read0 = EpisodesRead(job.node[0], 0), read1 = EpisodesRead(job.node[1], 1);
  EXPECT_GE(read0, kEpochs * kEpisodes / 2) << job.node[0].err;
  EXPECT_GE(read1, kEpochs * kEpisodes / 2) << job.node[1].err;
  EXPECT_LE(read0 + read1, kEpochs * kEpisodes + 2 * 2) << job.node[0].err << job.node[1].err;
  EXPECT_THAT(job.node[0].out + job.node[0].err, HasSubstr("streaming"));
}

// Under the shared root: rank 0's run alone, and one whole copy of the dataset that both ranks
// fetched into the cache.
void ExpectOneRunAndOneCachedCopy(const Nodes& nodes) {
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(nodes.shared + "/root/runs"),
                          std::filesystem::directory_iterator()),
            1);
  std::vector<std::string> cached;
  for (const auto& entry : std::filesystem::directory_iterator(nodes.shared + "/root/cache")) {
    cached.push_back(entry.path().filename().string());
  }
  EXPECT_THAT(cached, ::testing::ElementsAre(::testing::EndsWith(".hdf5")));
}

void ExpectTheJobSharedEveryEpoch(const Nodes& nodes, const JobResult& job) {
  ASSERT_EQ(job.node[0].exit_code, 0) << job.node[0].err;
  ASSERT_EQ(job.node[1].exit_code, 0) << job.node[1].err;
  ExpectEveryWindowOncePerEpoch(job);
  ExpectEachEpisodeReadAboutOnce(job);
  ExpectOneRunAndOneCachedCopy(nodes);
}

TEST(TrainMultiNodeTest, TwoNodesOfOneRankEachShareEveryEpochThroughASharedFolder) {
  Nodes nodes;
  nodes.shared = testing::MakeTempDir("multinode");
  const std::string socket = nodes.shared + "/registry.sock";
  nodes.registry = "unix:" + socket;
  nodes.master_addr = "127.0.0.1";
  nodes.on_node = [](int, const std::vector<std::string>& argv) { return argv; };
  testing::ServedProcess registry({"serve", "registry", "--listen", nodes.registry, "--root", nodes.shared + "/store"},
                                  socket, nodes.shared);
  ASSERT_TRUE(registry.ready());
  ASSERT_NO_FATAL_FAILURE(RegisterDemos(nodes));
  // A free port may be taken before rank 0 binds it: then the job is started again on another.
  for (int attempt = 0; attempt < 3; ++attempt) {
    const JobResult job = RunJob(nodes, std::to_string(testing::FreePort()), std::to_string(attempt));
    if (PortWasTaken(job)) continue;
    ExpectTheJobSharedEveryEpoch(nodes, job);
    return;
  }
  FAIL() << "three free ports were taken before rank 0 could bind them";
}

// A process started in the background, stopped with SIGTERM when the test leaves.
class Background {
 public:
  Background(const std::vector<std::string>& argv, const std::string& cwd)
      : running_(testing::StartProgram(argv, {}, cwd)) {}
  ~Background() {
    if (running_.pid <= 0) return;
    ::kill(running_.pid, SIGTERM);
    testing::FinishProgram(running_);
  }
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;

 private:
  testing::RunningProgram running_;
};

// Each node on a network of its own: the registry and rank 0 on host 0, rank 1 on host 1,
// reaching them only over the link; no GLOO_SOCKET_IFNAME, so Gloo finds each node's address on
// the link by itself (the host name resolves to an interface neither network namespace has).
TEST(TrainMultiNodeTest, TwoNodesOnTwoNetworksShareEveryEpochOverTheLinkBetweenThem) {
  const testing::TwoHostLink link;
  if (!link.ok()) GTEST_SKIP() << "no two-host network: " << link.why();
  Nodes nodes;
  nodes.shared = testing::MakeTempDir("multinode-link");
  nodes.master_addr = testing::TwoHostLink::Address(0);
  nodes.registry = nodes.master_addr + ":50051";
  nodes.on_node = [&link](int node, const std::vector<std::string>& argv) { return link.On(node, argv); };
  const Background registry(link.On(0, {RoboloopBinary(), "serve", "registry", "--listen", nodes.registry,
                                         "--insecure", "--root", nodes.shared + "/store"}),
                            nodes.shared);
  const std::vector<std::string> ping =
      link.On(1, {RoboloopBinary(), "registry", "ls", "--registry", nodes.registry});
  ProgramResult reached;
  for (int i = 0; i < 200 && (reached = RunProgram(ping)).exit_code != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(reached.exit_code, 0) << "host 1 never reached the registry on host 0: " << reached.err;
  ASSERT_NO_FATAL_FAILURE(RegisterDemos(nodes));
  ExpectTheJobSharedEveryEpoch(nodes, RunJob(nodes, "29500", "link"));
}

}  // namespace
}  // namespace roboloop::train
