// TrainService over a real gRPC socket (issue 6, req 8): a run streams its events and
// finishes; Cancel stops a run after registering a checkpoint; bad requests (a missing
// dataset, an unknown policy, an unknown device) are refused. The worker's command line is
// TrainJobArgv of the job the service means (issue 27).
#include <CLI/CLI.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "common/grpc_server.h"
#include "common/status.h"
#include "tests/util/subprocess.h"
#include "train/dataset_set.h"
#include "train/train_job.h"
#include "train/train_service.h"

namespace roboloop::train {
namespace {

using ::testing::HasSubstr;

class TrainServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("train_service");
    const testing::ProgramResult collect =
        testing::RunProgram({testing::RoboloopBinary(), "sim", "collect", "--task", "cartpole-swingup", "--policy",
                             "expert", "--episodes", "4", "--max-steps", "60", "-o", dir_ + "/d.hdf5"});
    ASSERT_EQ(collect.exit_code, 0) << collect.err;
    TrainServiceOptions options;
    options.roboloop_binary = testing::RoboloopBinary();
    options.root = dir_ + "/root";
    handler_ = std::make_unique<TrainServiceHandler>(options);
    service_ = std::make_unique<TrainGrpcService>(handler_.get());
    common::GrpcServerOptions server_options;
    server_options.listen_address = "unix:" + dir_ + "/train.sock";
    auto server = common::GrpcServer::Create(server_options, {service_.get()});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    common::GrpcChannelOptions channel;
    channel.target = server_->target();
    auto client = TrainClient::Connect(channel);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(*client);
  }

  v1::TrainRequest Request(int64_t steps) const {
    v1::TrainRequest request;
    v1::TrainConfig* c = request.mutable_config();
    c->set_dataset(dir_ + "/d.hdf5");
    c->set_model("served");
    c->set_steps(steps);
    c->set_batch_size(8);
    c->mutable_policy()->set_kind("mlp");
    c->mutable_policy()->add_hidden(16);
    return request;
  }

  std::string dir_;
  std::unique_ptr<TrainServiceHandler> handler_;
  std::unique_ptr<TrainGrpcService> service_;
  std::unique_ptr<common::GrpcServer> server_;
  std::unique_ptr<TrainClient> client_;
};

TEST_F(TrainServiceTest, TrainStreamsStepsCheckpointAndFinished) {
  std::vector<v1::TrainEvent> events;
  const absl::Status status = client_->Train(Request(5), [&](const v1::TrainEvent& e) { events.push_back(e); });
  ASSERT_TRUE(status.ok()) << status;
  int steps = 0, checkpoints = 0, finished = 0;
  for (const v1::TrainEvent& e : events) {
    steps += e.has_step();
    checkpoints += e.has_checkpoint();
    finished += e.has_finished();
    EXPECT_FALSE(e.run_id().empty());
  }
  EXPECT_EQ(steps, 5);
  EXPECT_EQ(checkpoints, 1);
  EXPECT_EQ(finished, 1);
  EXPECT_EQ(events.back().finished().steps(), 5);
}

TEST_F(TrainServiceTest, CancelStopsTheRunAfterACheckpoint) {
  std::vector<v1::TrainEvent> events;
  absl::Mutex mu;
  std::string run_id;
  absl::Status status;
  std::thread call([&] {
    status = client_->Train(Request(10000000), [&](const v1::TrainEvent& e) {
      absl::MutexLock lock(&mu);
      run_id = e.run_id();
      events.push_back(e);
    });
  });
  for (int i = 0; i < 600; ++i) {
    {
      absl::MutexLock lock(&mu);
      if (events.size() >= 3) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::string id;
  {
    absl::MutexLock lock(&mu);
    id = run_id;
  }
  ASSERT_FALSE(id.empty());
  auto cancelled = client_->Cancel(id);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_TRUE(cancelled->cancelled());
  call.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  bool checkpoint = false;
  for (const v1::TrainEvent& e : events) checkpoint = checkpoint || e.has_checkpoint();
  EXPECT_TRUE(checkpoint) << "a cancelled run registers the steps it completed";
  EXPECT_FALSE(client_->Cancel(id)->cancelled());
}

TEST_F(TrainServiceTest, BadRequestsAreRefused) {
  v1::TrainRequest no_dataset = Request(5);
  no_dataset.mutable_config()->clear_dataset();
  EXPECT_THAT(client_->Train(no_dataset, [](const v1::TrainEvent&) {}).message(), HasSubstr("dataset is required"));
  v1::TrainRequest unknown = Request(5);
  unknown.mutable_config()->mutable_policy()->set_kind("diffusion");
  const absl::Status status = client_->Train(unknown, [](const v1::TrainEvent&) {});
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("known: mlp, transformer"));
  v1::TrainRequest bad_device = Request(5);
  bad_device.mutable_config()->set_device("tpu");
  EXPECT_THAT(client_->Train(bad_device, [](const v1::TrainEvent&) {}).message(),
              HasSubstr("device 'tpu' is not one of cpu, cuda, cuda:N, auto"));
}

// A resume keeps its checkpoint's batch_size per rank, while device auto on fewer GPUs than ranks
// gives each rank a larger batch. A run resumed under the placement it had (a pipeline's `run
// --resume` on the same node) goes on; one placed otherwise is refused by the worker, and the
// error says how the service placed it (the request never named the batch size it contradicts).
TEST_F(TrainServiceTest, AResumePlacedAsItsRunWasGoesOnAndOnePlacedOtherwiseSaysHowItWasPlaced) {
  TrainServiceOptions options;
  options.roboloop_binary = testing::RoboloopBinary();
  options.root = dir_ + "/root";
  options.cuda_devices = []() -> absl::StatusOr<int> { return 1; };
  TrainServiceHandler one_gpu(options);
  auto on_one_gpu = [&](int64_t steps, const std::string& resume, std::string* checkpoint) {
    v1::TrainRequest request = Request(steps);
    request.mutable_config()->set_device("auto");
    request.mutable_config()->set_resume(resume);
    request.set_world_size(2);
    return one_gpu.Train(request, [checkpoint](const v1::TrainEvent& e) {
      if (e.has_finished()) *checkpoint = e.finished().checkpoint_id();
      return absl::OkStatus();
    }, nullptr);
  };
  std::string placed, resumed;
  ASSERT_TRUE(on_one_gpu(3, "", &placed).ok());
  const absl::Status same = on_one_gpu(6, placed, &resumed);
  ASSERT_TRUE(same.ok()) << same;
  EXPECT_FALSE(resumed.empty());

  std::vector<v1::TrainEvent> events;
  ASSERT_TRUE(client_->Train(Request(3), [&](const v1::TrainEvent& e) { events.push_back(e); }).ok());
  const std::string as_asked = events.back().finished().checkpoint_id();  // batch 8 per rank, as on 2 GPUs
  std::string none;
  const absl::Status other = on_one_gpu(6, as_asked, &none);
  EXPECT_EQ(other.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(other.message(), HasSubstr("failed before training as placed (device auto: 2 ranks asked, 1 GPU visible: "
                                         "running 1 rank of batch_size 16 (global batch 16 kept))"));
  EXPECT_THAT(other.message(), HasSubstr("--batch-size 16 contradicts checkpoint " + as_asked + " (batch_size 8)"));
  EXPECT_TRUE(none.empty());
}

// Parses `argv` ({program, "train", ...}) as `roboloop train` does.
TrainJob ParseAsTheCliDoes(const std::vector<std::string>& argv) {
  TrainJob job;
  CLI::App app;
  AddTrainJobFlags(app.add_subcommand(kTrainSubcommand), &job);
  std::vector<const char*> c_argv;
  for (const std::string& arg : argv) c_argv.push_back(arg.c_str());
  app.parse(static_cast<int>(c_argv.size()), c_argv.data());
  return job;
}

// A service whose worker is a script recording its command line, on a node said to have
// `gpus` GPUs; `options` gives the rest of its settings.
class FakeWorkerService {
 public:
  explicit FakeWorkerService(int gpus, TrainServiceOptions options = {})
      : dir_(testing::MakeTempDir("train_launch")), options_(std::move(options)) {
    const std::string fake = dir_ + "/fake_roboloop";
    {
      std::ofstream script(fake);
      script << "#!/bin/sh\nprintf '%s\\n' \"$0\" \"$@\" > " << dir_ << "/argv.txt\n";
    }
    ROBOLOOP_CHECK(chmod(fake.c_str(), 0755) == 0);
    options_.roboloop_binary = fake;
    options_.root = dir_ + "/root";
    options_.cuda_devices = [gpus]() -> absl::StatusOr<int> { return gpus; };
    handler_ = std::make_unique<TrainServiceHandler>(options_);
  }

  // Trains `request`, collecting the events the service sends itself.
  absl::Status Train(const v1::TrainRequest& request, std::vector<v1::TrainEvent>* events) {
    return handler_->Train(
        request, [events](const v1::TrainEvent& e) { events->push_back(e); return absl::OkStatus(); }, nullptr);
  }

  // Trains `ranks` ranks of `batch_size` on `device`.
  absl::Status Train(const std::string& device, int ranks, int batch_size, std::vector<v1::TrainEvent>* events) {
    v1::TrainRequest request;
    request.mutable_config()->set_dataset("demos@latest");
    request.mutable_config()->set_device(device);
    request.mutable_config()->set_batch_size(batch_size);
    request.set_world_size(ranks);
    return Train(request, events);
  }

  // The worker's recorded command line.
  std::vector<std::string> Argv() const {
    std::vector<std::string> argv;
    std::ifstream recorded(dir_ + "/argv.txt");
    for (std::string line; std::getline(recorded, line);) argv.push_back(line);
    return argv;
  }

  const TrainServiceOptions& options() const { return options_; }

 private:
  std::string dir_;
  TrainServiceOptions options_;
  std::unique_ptr<TrainServiceHandler> handler_;
};

// A served TrainService (a dataset folder set) trains on a path inside its folder and refuses
// one outside it before any run starts.
TEST_F(TrainServiceTest, AServiceWithADatasetFolderReadsPathsOnlyInsideIt) {
  TrainServiceOptions options;
  options.roboloop_binary = testing::RoboloopBinary();
  options.root = dir_ + "/served-root";
  options.dataset_dir = dir_;
  TrainServiceHandler served(options);
  auto ignore = [](const v1::TrainEvent&) { return absl::OkStatus(); };
  for (const std::string& outside : {dir_ + "/d.hdf5", std::string("../d.hdf5"), std::string("x/../../d.hdf5")}) {
    v1::TrainRequest request = Request(2);
    request.mutable_config()->add_datasets(outside);
    const absl::Status refused = served.Train(request, ignore, nullptr);
    EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument) << outside << ": " << refused;
    EXPECT_THAT(refused.message(), HasSubstr("config dataset under " + dir_));
  }
  EXPECT_FALSE(std::ifstream(dir_ + "/served-root/runs").good()) << "a refused request started a run";
  v1::TrainRequest inside = Request(2);
  inside.mutable_config()->set_dataset("d.hdf5");
  const absl::Status trained = served.Train(inside, ignore, nullptr);
  EXPECT_TRUE(trained.ok()) << trained;
}

TEST(TrainServiceDatasetTest, PathsResolveInsideTheFolderAndReferencesStayAsTheyAre) {
  for (const char* reference : {"demos", "demos:v3", "demos@latest", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"}) {
    EXPECT_FALSE(DatasetEntryIsPath(reference)) << reference;
    EXPECT_EQ(*ServedDatasetEntry("/srv/data", reference), reference);
  }
  for (const char* path : {"d.hdf5", "d.h5", "runs/a", "runs/*.hdf5", "demo?"}) {
    EXPECT_TRUE(DatasetEntryIsPath(path)) << path;
    EXPECT_EQ(*ServedDatasetEntry("/srv/data", path), std::string("/srv/data/") + path);
    EXPECT_EQ(*ServedDatasetEntry("", path), path) << "no folder: as given";
  }
  for (const char* outside : {"/etc/d.hdf5", "../d.hdf5", "a/../../d.hdf5", "a//b.hdf5"}) {
    EXPECT_EQ(ServedDatasetEntry("/srv/data", outside).status().code(), absl::StatusCode::kInvalidArgument) << outside;
  }
}

TEST(TrainServiceLaunchTest, TheWorkerCommandLineIsTheTrainJobArgv) {
  TrainServiceOptions options;
  options.registry_address = "unix:/run/registry.sock";
  options.registry_token_file = "/etc/token";
  FakeWorkerService service(/*gpus=*/0, options);
  v1::TrainRequest request;
  request.mutable_config()->set_dataset("demos@latest");
  request.set_world_size(2);
  std::vector<v1::TrainEvent> events;
  const absl::Status status = service.Train(request, &events);
  ASSERT_TRUE(status.ok()) << status;

  const std::vector<std::string> argv = service.Argv();
  const TrainJob job = ParseAsTheCliDoes(argv);
  EXPECT_EQ(TrainJobArgv(service.options().roboloop_binary, job), argv)
      << "the service builds its command line with TrainJobArgv";
  EXPECT_EQ(job.nproc_per_node, 2);
  EXPECT_EQ(job.root, service.options().root);
  EXPECT_EQ(job.registry_address, options.registry_address);
  EXPECT_EQ(job.registry_token_file, options.registry_token_file);
  EXPECT_FALSE(job.run_id.empty());
  EXPECT_EQ(job.config_path, service.options().root + "/runs/" + job.run_id + "/request.json");
  EXPECT_GE(job.progress_fd, 3);
  EXPECT_EQ(job.exit_with_parent, getpid());
}

TEST(TrainServicePlacementTest, AutoOnFewerGpusThanRanksRunsOneRankPerGpuWithTheGlobalBatch) {
  FakeWorkerService service(/*gpus=*/1);
  std::vector<v1::TrainEvent> events;
  ASSERT_TRUE(service.Train("auto", 2, 128, &events).ok());
  const TrainJob job = ParseAsTheCliDoes(service.Argv());
  EXPECT_EQ(job.nproc_per_node, 1);
  EXPECT_EQ(job.overrides.batch_size(), 256);
  ASSERT_EQ(events.size(), 1u);
  ASSERT_TRUE(events[0].has_placement());
  EXPECT_EQ(events[0].run_id(), job.run_id);
  EXPECT_EQ(events[0].placement().ranks(), 1);
  EXPECT_EQ(events[0].placement().batch_size(), 256);
  EXPECT_THAT(events[0].placement().note(), HasSubstr("global batch 256 kept"));
}

TEST(TrainServicePlacementTest, AutoWithoutAGpuOrWithEnoughRunsTheRanksAsked) {
  for (const int gpus : {0, 2}) {
    FakeWorkerService service(gpus);
    std::vector<v1::TrainEvent> events;
    ASSERT_TRUE(service.Train("auto", 2, 128, &events).ok());
    const TrainJob job = ParseAsTheCliDoes(service.Argv());
    EXPECT_EQ(job.nproc_per_node, 2) << gpus << " GPUs";
    EXPECT_EQ(job.overrides.batch_size(), 0) << gpus << " GPUs: the request's own batch_size serves";
    EXPECT_TRUE(events.empty()) << gpus << " GPUs";
  }
}

TEST(TrainServicePlacementTest, TooFewGpusForCudaOrAnUnevenAutoBatchIsRefusedBeforeTheRun) {
  FakeWorkerService one_gpu(/*gpus=*/1);
  std::vector<v1::TrainEvent> events;
  const absl::Status cuda = one_gpu.Train("cuda", 2, 128, &events);
  EXPECT_EQ(cuda.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(cuda.message(), HasSubstr("device cuda: 2 ranks need 2 GPUs"));
  FakeWorkerService three_gpus(/*gpus=*/3);
  const absl::Status uneven = three_gpus.Train("auto", 4, 127, &events);
  EXPECT_EQ(uneven.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(uneven.message(), HasSubstr("cannot be shared evenly by the 3 GPUs"));
  EXPECT_TRUE(events.empty());
}

}  // namespace
}  // namespace roboloop::train
