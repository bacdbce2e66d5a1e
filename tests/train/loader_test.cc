// The loader: windows, padding by repetition, the sampling contract (determinism across
// workers, rank sharding, Seek, epochs), normalization and option errors.
#include "train/loader.h"

#include <algorithm>
#include <set>
#include <utility>

#include "data/dataset_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/test_util.h"
#include "tests/train/encoded_episodes.h"
#include "train/sampling.h"

namespace roboloop::train {
namespace {

using ::testing::HasSubstr;

using testing::EncodedEpisode;

class LoaderTest : public ::testing::Test {
 protected:
  // Episode lengths 5, 12, 3, 1, 9: 30 windows.
  void SetUp() override {
    data::DatasetWriter::Options writer_options;
    writer_options.path = dir_.File("d.hdf5");
    auto writer = data::DatasetWriter::Create(writer_options);
    ASSERT_TRUE(writer.ok()) << writer.status();
    for (size_t i = 0; i < lengths_.size(); ++i) {
      ASSERT_TRUE((*writer)->WriteEpisode(EncodedEpisode(static_cast<int>(i), lengths_[i])).ok());
    }
    ASSERT_TRUE((*writer)->Close().ok());
    data::EpisodeStore::Options store_options;
    store_options.path = writer_options.path;
    auto store = data::EpisodeStore::Load(store_options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(store).value();
  }

  LoaderOptions RawOptions() const {
    LoaderOptions options;
    options.obs_features = {"obs/a", "obs/e"};
    options.batch_size = 4;
    options.seed = 11;
    options.normalize = false;
    return options;
  }

  std::unique_ptr<Loader> MakeLoader(const LoaderOptions& options,
                                     const Normalization& norm = {}) {
    auto loader = Loader::Create(store_, norm, options);
    EXPECT_TRUE(loader.ok()) << loader.status();
    return loader.ok() ? std::move(loader).value() : nullptr;
  }

  // The (episode, t) of sample i, read from its last (always real) obs slot.
  static std::pair<int, int> WindowOf(const Batch& batch, int i) {
    const float* last = &batch.obs[((i + 1) * batch.history - 1) * batch.obs_dim];
    return {static_cast<int>(last[2]), static_cast<int>(last[0] - 1000.0f * last[2])};
  }

  // The store row of (episode, t).
  int64_t RowOf(std::pair<int, int> window) const {
    return store_->episode_offset(window.first) + window.second;
  }

  data::testing::TempDir dir_;
  std::vector<int> lengths_ = {5, 12, 3, 1, 9};
  std::shared_ptr<const data::EpisodeStore> store_;
};

void ExpectSameBatch(const Batch& a, const Batch& b) {
  EXPECT_EQ(a.index, b.index);
  EXPECT_EQ(a.obs, b.obs);
  EXPECT_EQ(a.history_length, b.history_length);
  EXPECT_EQ(a.actions, b.actions);
  EXPECT_EQ(a.action_valid, b.action_valid);
}

TEST_F(LoaderTest, CountsWindowsAndBatchesPerEpoch) {
  LoaderOptions options = RawOptions();
  auto loader = MakeLoader(options);
  EXPECT_EQ(loader->windows(), 30);
  EXPECT_EQ(loader->batches_per_epoch(), 7);
  options.batch_size = 3;
  options.world_size = 4;
  EXPECT_EQ(MakeLoader(options)->batches_per_epoch(), 2);
}

TEST_F(LoaderTest, PadsHistoryAndChunkByRepetition) {
  LoaderOptions options = RawOptions();
  options.history = 3;
  options.chunk = 4;
  options.batch_size = 30;  // one batch holds every window
  auto loader = MakeLoader(options);
  const Batch batch = testing::TakeBatches(*loader, 1)[0];
  ASSERT_EQ(batch.obs.size(), 30u * 3 * 3);
  ASSERT_EQ(batch.actions.size(), 30u * 4 * 2);
  std::set<std::pair<int, int>> seen;
  for (int i = 0; i < 30; ++i) {
    const auto [e, t] = WindowOf(batch, i);
    seen.insert({e, t});
    const int length = lengths_[e];
    EXPECT_EQ(batch.history_length[i], std::min(3, t + 1));
    EXPECT_EQ(batch.sample_episode[i], e);
    EXPECT_EQ(batch.sample_step[i], t);
    for (int h = 0; h < 3; ++h) {
      const int step = std::max(0, t - 2 + h);
      const float* obs = &batch.obs[(i * 3 + h) * 3];
      EXPECT_EQ(obs[0], 1000.0f * e + step) << e << " " << t << " slot " << h;
      EXPECT_EQ(obs[1], 0.5f * step);
      EXPECT_EQ(obs[2], e);
    }
    for (int c = 0; c < 4; ++c) {
      const int step = std::min(length - 1, t + c);
      const float* action = &batch.actions[(i * 4 + c) * 2];
      EXPECT_EQ(action[0], 1000.0f * e + step) << e << " " << t << " slot " << c;
      EXPECT_EQ(action[1], -1.0f * step);
      EXPECT_EQ(batch.action_valid[i * 4 + c], t + c < length ? 1 : 0);
    }
  }
  EXPECT_EQ(seen.size(), 30u);  // every window exactly once
}

TEST_F(LoaderTest, BatchesFollowTheEpochPermutation) {
  LoaderOptions options = RawOptions();
  auto loader = MakeLoader(options);
  const std::vector<Batch> batches = testing::TakeBatches(*loader, 16);
  for (int k = 0; k < 16; ++k) {
    const std::vector<int64_t> permutation = EpochPermutation(30, options.seed, k / 7);
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(RowOf(WindowOf(batches[k], i)), permutation[(k % 7) * 4 + i]) << k << " " << i;
    }
  }
}

TEST_F(LoaderTest, BatchesDoNotDependOnWorkersOrPrefetch) {
  LoaderOptions options = RawOptions();
  options.history = 2;
  options.chunk = 3;
  options.num_workers = 1;
  options.prefetch = 1;
  auto one = MakeLoader(options);
  options.num_workers = 3;
  options.prefetch = 5;
  auto three = MakeLoader(options);
  const std::vector<Batch> a = testing::TakeBatches(*one, 20);
  const std::vector<Batch> b = testing::TakeBatches(*three, 20);
  for (int k = 0; k < 20; ++k) {
    EXPECT_EQ(a[k].index, k);
    ExpectSameBatch(a[k], b[k]);
  }
}

TEST_F(LoaderTest, RanksTogetherFormTheWorldOneBatch) {
  LoaderOptions options = RawOptions();
  options.chunk = 2;
  options.batch_size = 6;
  const std::vector<Batch> whole = testing::TakeBatches(*MakeLoader(options), 10);
  options.batch_size = 2;
  options.world_size = 3;
  std::vector<std::vector<Batch>> shards;
  for (int rank = 0; rank < 3; ++rank) {
    options.rank = rank;
    shards.push_back(testing::TakeBatches(*MakeLoader(options), 10));
  }
  for (int k = 0; k < 10; ++k) {
    Batch joined = shards[0][k];
    for (int rank = 1; rank < 3; ++rank) {
      const Batch& part = shards[rank][k];
      joined.obs.insert(joined.obs.end(), part.obs.begin(), part.obs.end());
      joined.history_length.insert(joined.history_length.end(), part.history_length.begin(),
                                   part.history_length.end());
      joined.actions.insert(joined.actions.end(), part.actions.begin(), part.actions.end());
      joined.action_valid.insert(joined.action_valid.end(), part.action_valid.begin(),
                                 part.action_valid.end());
    }
    ExpectSameBatch(joined, whole[k]);
  }
}

TEST_F(LoaderTest, SeekReproducesBatches) {
  LoaderOptions options = RawOptions();
  options.num_workers = 3;
  auto loader = MakeLoader(options);
  const std::vector<Batch> reference = testing::TakeBatches(*loader, 12);
  EXPECT_EQ(loader->cursor(), 12);

  auto resumed = MakeLoader(options);
  resumed->Seek(9);
  EXPECT_EQ(resumed->cursor(), 9);
  const std::vector<Batch> tail = testing::TakeBatches(*resumed, 3);
  for (int i = 0; i < 3; ++i) ExpectSameBatch(tail[i], reference[9 + i]);
  resumed->Seek(2);
  ExpectSameBatch(testing::TakeBatches(*resumed, 1)[0], reference[2]);
  EXPECT_EQ(resumed->cursor(), 3);
}

TEST_F(LoaderTest, NextAfterNegativeSeekFails) {
  auto loader = MakeLoader(RawOptions());
  loader->Seek(-1);
  EXPECT_THAT(loader->Next().status().message(), HasSubstr("cursor is -1"));
  loader->Seek(0);
  EXPECT_TRUE(loader->Next().ok());
  EXPECT_GE(loader->wait_seconds(), 0.0);
}

TEST_F(LoaderTest, EpochsVisitEveryWindowOnceInDifferentOrders) {
  LoaderOptions options = RawOptions();
  options.batch_size = 5;  // 6 batches cover the 30 windows exactly
  auto loader = MakeLoader(options);
  std::vector<std::vector<int64_t>> orders(3);
  for (int epoch = 0; epoch < 3; ++epoch) {
    for (const Batch& batch : testing::TakeBatches(*loader, 6)) {
      for (int i = 0; i < 5; ++i) orders[epoch].push_back(RowOf(WindowOf(batch, i)));
    }
    std::vector<int64_t> sorted = orders[epoch];
    std::sort(sorted.begin(), sorted.end());
    for (int64_t row = 0; row < 30; ++row) ASSERT_EQ(sorted[row], row) << "epoch " << epoch;
  }
  EXPECT_NE(orders[0], orders[1]);
  EXPECT_NE(orders[1], orders[2]);
}

TEST_F(LoaderTest, DifferentSeedsGiveDifferentOrders) {
  LoaderOptions options = RawOptions();
  const std::vector<Batch> a = testing::TakeBatches(*MakeLoader(options), 1);
  options.seed = 12;
  const std::vector<Batch> b = testing::TakeBatches(*MakeLoader(options), 1);
  EXPECT_NE(a[0].obs, b[0].obs);
}

TEST_F(LoaderTest, AppliesNormalization) {
  LoaderOptions options = RawOptions();
  options.history = 2;
  options.chunk = 2;
  auto norm = NormalizationFromStore(*store_, options.obs_features, options.action_feature);
  ASSERT_TRUE(norm.ok()) << norm.status();
  const Batch raw = testing::TakeBatches(*MakeLoader(options), 1)[0];
  options.normalize = true;
  const Batch normalized = testing::TakeBatches(*MakeLoader(options, *norm), 1)[0];
  ASSERT_EQ(raw.obs.size(), normalized.obs.size());
  for (size_t i = 0; i < raw.obs.size(); ++i) {
    const size_t e = i % 3;
    EXPECT_EQ(normalized.obs[i], (raw.obs[i] - norm->obs_mean[e]) / norm->obs_std[e]) << i;
  }
  for (size_t i = 0; i < raw.actions.size(); ++i) {
    const size_t e = i % 2;
    EXPECT_EQ(normalized.actions[i], (raw.actions[i] - norm->action_mean[e]) / norm->action_std[e]);
  }
  EXPECT_NE(raw.obs, normalized.obs);
  EXPECT_EQ(raw.action_valid, normalized.action_valid);
}

TEST_F(LoaderTest, RejectsBadOptions) {
  auto error = [&](const LoaderOptions& options, const Normalization& norm = {}) {
    auto loader = Loader::Create(store_, norm, options);
    EXPECT_FALSE(loader.ok());
    return std::string(loader.status().message());
  };
  LoaderOptions options = RawOptions();
  options.obs_features = {"obs/a", "obs/missing"};
  EXPECT_THAT(error(options), HasSubstr("obs feature 'obs/missing'"));
  options.obs_features = {"obs/wide"};
  EXPECT_THAT(error(options), HasSubstr("obs feature 'obs/wide' is float64"));
  options = RawOptions();
  options.obs_features.clear();
  EXPECT_THAT(error(options), HasSubstr("no obs features"));
  options = RawOptions();
  options.action_feature = "rewards";
  EXPECT_THAT(error(options), HasSubstr("action feature 'rewards'"));
  options = RawOptions();
  options.history = 0;
  EXPECT_THAT(error(options), HasSubstr("history must be >= 1, got 0"));
  options = RawOptions();
  options.chunk = -2;
  EXPECT_THAT(error(options), HasSubstr("chunk must be >= 1, got -2"));
  options = RawOptions();
  options.batch_size = 8;
  options.world_size = 4;
  EXPECT_THAT(error(options), HasSubstr("= 32 exceeds the 30 windows"));
  options = RawOptions();
  options.world_size = 2;
  options.rank = 2;
  EXPECT_THAT(error(options), HasSubstr("rank 2 is outside [0, world_size = 2)"));
  options = RawOptions();
  options.num_workers = 0;
  EXPECT_THAT(error(options), HasSubstr("num_workers must be >= 1"));
  options = RawOptions();
  options.normalize = true;
  Normalization norm{{0, 0}, {1, 1}, {0, 0}, {1, 1}};
  EXPECT_THAT(error(options, norm),
              HasSubstr("normalization obs mean has 2 entries but the row has 3"));
  EXPECT_THAT(Loader::Create(nullptr, norm, RawOptions()).status().message(),
              HasSubstr("no episode store"));
}

}  // namespace
}  // namespace roboloop::train
