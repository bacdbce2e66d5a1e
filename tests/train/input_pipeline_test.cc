// The input pipeline (issue 22, req 5; issue 28, req 3): batches staged one step ahead
// (train/lookahead_batches.h) train exactly as unstaged ones, on the CPU (where staging does
// nothing) and on a GPU (pinned buffers, side-stream copies: train/torch/device_batches.h);
// a staged copy is what its step takes; and the training thread neither decodes camera frames
// nor builds batches, in memory or streaming. The Cuda cases run where LibTorch sees a GPU and
// skip elsewhere.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <time.h>

#include <algorithm>
#include <cmath>
#include <random>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "data/dataset_writer.h"
#include "data/episode_cache.h"
#include "tests/data/test_util.h"
#include "tests/util/loaded_torch_runtime.h"
#include "tests/util/sanitizers.h"
#include "train/loader.h"
#include "train/lookahead_batches.h"
#include "train/normalization.h"
#include "train/torch_runtime.h"

namespace roboloop::train {
namespace {

using ::roboloop::testing::CudaDevicesLibTorchSees;
using ::roboloop::testing::LoadedTorchRuntime;

constexpr int kObs = 3, kAct = 2, kHistory = 2, kChunk = 2, kSide = 24;

// A small transformer policy that sees one kSide x kSide camera.
std::unique_ptr<TorchTrainer> MakeTrainer(const std::string& device) {
  const nlohmann::json policy = {
      {"kind", "transformer"}, {"obs_dim", kObs}, {"action_dim", kAct}, {"history", kHistory},
      {"chunk", kChunk}, {"d_model", 16}, {"layers", 1}, {"heads", 2}, {"ffn", 32},
      {"cameras", {{{"name", "cam"}, {"width", kSide}, {"height", kSide}}}},
      {"encoder_channels", 8}, {"encoder_blocks", 1}, {"keypoints", 4}};
  const nlohmann::json config = {{"policy", policy},
                                 {"optimizer", {{"lr", 1e-3}, {"total_steps", 20}}},
                                 {"seed", 5},
                                 {"threads", 1},
                                 {"device", device}};
  auto trainer = LoadedTorchRuntime().CreateTrainer(config.dump());
  ROBOLOOP_CHECK_MSG(trainer.ok(), trainer.status().ToString());
  return std::move(*trainer);
}

// A dataset of `episodes` episodes of `steps` steps with state, actions and one camera whose
// frames are noisy gradients (so that deflate has work to undo).
std::string WriteImageDataset(const std::string& path, int episodes, int steps, int side) {
  data::DatasetWriter::Options options;
  options.path = path;
  auto writer = data::DatasetWriter::Create(options);
  ROBOLOOP_CHECK_MSG(writer.ok(), writer.status().ToString());
  std::mt19937 rng(9);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> noise(0, 15);
  for (int e = 0; e < episodes; ++e) {
    std::vector<float> obs, actions;
    std::vector<uint8_t> frames;
    for (int t = 0; t < steps; ++t) {
      for (int i = 0; i < kObs; ++i) obs.push_back(normal(rng));
      for (int i = 0; i < kAct; ++i) actions.push_back(normal(rng));
      for (int i = 0; i < side * side * 3; ++i) frames.push_back(static_cast<uint8_t>((i / 3 + t * 7 + e) % 200 + noise(rng)));
    }
    data::Episode episode;
    episode["obs/state"] = data::Array::From<float>({steps, kObs}, obs);
    episode["actions"] = data::Array::From<float>({steps, kAct}, actions);
    episode["obs/cam_image"] = data::Array::From<uint8_t>({steps, side, side, 3}, frames);
    ROBOLOOP_CHECK_MSG((*writer)->WriteEpisode(episode).ok(), "write");
  }
  ROBOLOOP_CHECK_MSG((*writer)->Close().ok(), "close");
  return path;
}

LoaderOptions Options(int batch_size) {
  LoaderOptions options;
  options.obs_features = {"obs/state"};
  options.image_features = {"obs/cam_image"};
  options.history = kHistory;
  options.chunk = kChunk;
  options.batch_size = batch_size;
  options.seed = 3;
  return options;
}

std::shared_ptr<const data::EpisodeStore> LoadStore(const std::string& path) {
  data::EpisodeStore::Options options;
  options.path = path;
  auto store = data::EpisodeStore::Load(options);
  ROBOLOOP_CHECK_MSG(store.ok(), store.status().ToString());
  return std::shared_ptr<const data::EpisodeStore>(std::move(store).value());
}

std::unique_ptr<Loader> StoreLoader(const std::shared_ptr<const data::EpisodeStore>& store, int batch_size) {
  auto norm = NormalizationFromStore(*store, {"obs/state"}, "actions");
  ROBOLOOP_CHECK_MSG(norm.ok(), norm.status().ToString());
  auto loader = Loader::Create(store, *norm, Options(batch_size));
  ROBOLOOP_CHECK_MSG(loader.ok(), loader.status().ToString());
  return std::move(*loader);
}

// The losses of `steps` steps on `device`, each step's batch staged one step ahead
// (LookaheadBatches) or taken straight from the loader.
std::vector<double> Losses(const std::string& path, const std::string& device, bool staged, int steps) {
  auto loader = StoreLoader(LoadStore(path), 8);
  auto trainer = MakeTrainer(device);
  LookaheadBatches lookahead(*loader, *trainer, steps);
  std::vector<double> losses;
  for (int step = 0; step < steps; ++step) {
    absl::StatusOr<Batch> batch = staged ? lookahead.Next(step) : loader->Next();
    ROBOLOOP_CHECK_MSG(batch.ok(), batch.status().ToString());
    auto figures = trainer->Step(BatchView(*batch), step);
    ROBOLOOP_CHECK_MSG(figures.ok(), figures.status().ToString());
    losses.push_back(figures->loss);
  }
  return losses;
}

class InputPipelineTest : public ::testing::Test {
 protected:
  void SetUp() override { path_ = WriteImageDataset(dir_.File("images.hdf5"), 6, 10, kSide); }

  data::testing::TempDir dir_;
  std::string path_;
};

TEST_F(InputPipelineTest, StagedBatchesTrainExactlyAsUnstagedOnesOnTheCpu) {
  EXPECT_EQ(Losses(path_, "cpu", true, 5), Losses(path_, "cpu", false, 5));
}

// Step 0 exactly; later steps within 1e-6 relative, as CUDA's atomic-add backward kernels may
// sum in another order from run to run (tests/train/trainer_test.cc, CudaStateResumes...).
TEST_F(InputPipelineTest, CudaPipelinedRunGivesTheLossesOfTheUnpipelinedRun) {
  if (CudaDevicesLibTorchSees() == 0) GTEST_SKIP() << "no CUDA device";
  const std::vector<double> pipelined = Losses(path_, "cuda", true, 6);
  const std::vector<double> plain = Losses(path_, "cuda", false, 6);
  ASSERT_EQ(pipelined.size(), plain.size());
  EXPECT_EQ(pipelined[0], plain[0]);
  for (size_t step = 1; step < plain.size(); ++step) {
    EXPECT_LE(std::abs(pipelined[step] - plain[step]) / std::abs(plain[step]), 1e-6) << "step " << step;
  }
}

// The lookahead hands out the loader's batches in order, and its cursor counts the staged
// batch as not yet taken (what a checkpoint must save for an exact resume).
TEST_F(InputPipelineTest, LookaheadKeepsTheLoaderOrderAndCursor) {
  auto loader = StoreLoader(LoadStore(path_), 8);
  auto trainer = MakeTrainer("cpu");
  LookaheadBatches lookahead(*loader, *trainer, 4);
  EXPECT_EQ(lookahead.cursor(), 0);
  for (int step = 0; step < 4; ++step) {
    absl::StatusOr<Batch> batch = lookahead.Next(step);
    ASSERT_TRUE(batch.ok()) << batch.status();
    EXPECT_EQ(batch->index, step);
    EXPECT_EQ(lookahead.cursor(), step + 1);
    EXPECT_EQ(loader->cursor(), step + 1 < 4 ? step + 2 : step + 1) << "step " << step;
  }
}

// A batch staged for a step is read when staged: its step takes that copy even though the host
// arrays changed since, while a step the batch was not staged for copies the arrays afresh.
// (Step 0's loss is a forward alone, so it is exact on a GPU too.)
TEST_F(InputPipelineTest, CudaStepTakesTheCopyStagedForIt) {
  if (CudaDevicesLibTorchSees() == 0) GTEST_SKIP() << "no CUDA device";
  auto loader = StoreLoader(LoadStore(path_), 8);
  absl::StatusOr<Batch> batch = loader->Next();
  ASSERT_TRUE(batch.ok()) << batch.status();
  Batch changed = *batch;
  for (float& v : changed.actions) v += 3.0f;
  const double original_loss = MakeTrainer("cuda")->Step(BatchView(*batch), 0)->loss;
  const double changed_loss = MakeTrainer("cuda")->Step(BatchView(changed), 0)->loss;
  ASSERT_NE(original_loss, changed_loss);
  for (const int staged_step : {0, 1}) {
    Batch host = *batch;
    auto trainer = MakeTrainer("cuda");
    ASSERT_TRUE(trainer->Stage(BatchView(host), staged_step).ok());
    std::copy(changed.actions.begin(), changed.actions.end(), host.actions.begin());
    EXPECT_EQ(trainer->Step(BatchView(host), 0)->loss, staged_step == 0 ? original_loss : changed_loss)
        << "staged for step " << staged_step;
  }
}

// CPU seconds the calling thread has used.
double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double ProcessCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Of the CPU time spent while `loader` serves `batches` batches, the share the calling
// (training) thread used.
double ConsumerShare(Loader& loader, int batches) {
  const double process_before = ProcessCpuSeconds(), thread_before = ThreadCpuSeconds();
  for (int b = 0; b < batches; ++b) ROBOLOOP_CHECK_MSG(loader.Next().ok(), "next");
  const double thread = ThreadCpuSeconds() - thread_before;
  const double process = ProcessCpuSeconds() - process_before;
  return process > 0 ? thread / process : 1;
}

// Near 1 if the calling thread built the batches itself; measured 0.004-0.01 streaming and
// 0.06-0.08 in memory (where freeing each batch's pages is most of what is left).
constexpr double kMostConsumerShare = 0.3;

// Streaming through a cache far smaller than the dataset, every frame is inflated while the
// loader runs; the thread calling Next must use a small share of that CPU time.
TEST(DecodingOffTheTrainingThreadTest, StreamingWorkersInflateTheFrames) {
  data::testing::TempDir dir;
  const std::string path = WriteImageDataset(dir.File("big.hdf5"), 24, 40, 64);
  data::EpisodeCache::Options cache_options;
  cache_options.episodes.path = path;
  cache_options.capacity_bytes = 4 * 40 * (64 * 64 * 3 + 64);  // about 4 of the 24 episodes
  auto cache = data::EpisodeCache::Open(cache_options);
  ASSERT_TRUE(cache.ok()) << cache.status();
  std::shared_ptr<data::EpisodeCache> shared(std::move(*cache));
  auto norm = NormalizationFromStore(*LoadStore(path), {"obs/state"}, "actions");
  ASSERT_TRUE(norm.ok()) << norm.status();
  auto loader = Loader::CreateStreaming(shared, *norm, Options(16));
  ASSERT_TRUE(loader.ok()) << loader.status();
  const int64_t read_before = shared->counters().episodes_read;
  EXPECT_LT(ConsumerShare(**loader, 2 * static_cast<int>((*loader)->batches_per_epoch())), kMostConsumerShare);
  EXPECT_GE(shared->counters().episodes_read - read_before, 24) << "every episode was read again";
}

// In memory the frames were decoded once, by EpisodeStore::Load; the workers copy them into
// batches, and the thread calling Next again uses a small share of the CPU time.
TEST(DecodingOffTheTrainingThreadTest, InMemoryWorkersBuildTheBatches) {
  if (roboloop::testing::kAddressSanitizer) {
    GTEST_SKIP() << "AddressSanitizer poisons and quarantines each freed batch on the thread that frees it, the "
                    "consumer: its CPU share no longer says where the batches were built";
  }
  data::testing::TempDir dir;
  const std::string path = WriteImageDataset(dir.File("big.hdf5"), 8, 40, 64);
  auto loader = StoreLoader(LoadStore(path), 64);
  EXPECT_LT(ConsumerShare(*loader, 40), kMostConsumerShare);
}

}  // namespace
}  // namespace roboloop::train
