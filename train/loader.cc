#include "train/loader.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/status.h"
#include "train/batch_source.h"
#include "train/store_batches.h"
#include "train/stream_batches.h"

namespace roboloop::train {

RoboloopTrainBatch BatchView(const Batch& batch) {
  return RoboloopTrainBatch{batch.batch_size,     batch.history,   batch.chunk,
                            batch.obs_dim,        batch.action_dim, batch.obs.data(),
                            batch.history_length.data(), batch.actions.data(),
                            batch.action_valid.data(), batch.image_bytes,
                            batch.images.empty() ? nullptr : batch.images.data()};
}

absl::StatusOr<std::unique_ptr<Loader>> Loader::Create(
    std::shared_ptr<const data::EpisodeStore> store, const Normalization& norm,
    const LoaderOptions& options) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<BatchSource> source,
                            StoreBatches::Create(std::move(store), norm, options));
  return std::unique_ptr<Loader>(new Loader(std::move(source), options));
}

absl::StatusOr<std::unique_ptr<Loader>> Loader::CreateStreaming(
    std::shared_ptr<data::EpisodeCache> cache, const Normalization& norm,
    const LoaderOptions& options, int64_t block_windows) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<BatchSource> source,
                            StreamBatches::Create(std::move(cache), norm, options, block_windows));
  return std::unique_ptr<Loader>(new Loader(std::move(source), options));
}

Loader::Loader(std::unique_ptr<BatchSource> source, const LoaderOptions& options)
    : source_(std::move(source)), options_(options) {
  for (int i = 0; i < options_.num_workers; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

Loader::~Loader() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& worker : workers_) worker.join();
}

bool Loader::CanBuild() const {
  return stopping_ || (cursor_ >= 0 && next_to_build_ < cursor_ + options_.prefetch);
}

bool Loader::NextReady() const { return ready_.count(cursor_) > 0; }

void Loader::WorkerLoop() {
  while (true) {
    int64_t index = 0;
    int64_t generation = 0;
    int64_t cursor = 0;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &Loader::CanBuild));
      if (stopping_) return;
      index = next_to_build_++;
      generation = generation_;
      cursor = cursor_;
    }
    absl::StatusOr<Batch> batch = source_->Build(index, cursor);
    absl::MutexLock lock(&mu_);
    if (generation == generation_) ready_.emplace(index, std::move(batch));
  }
}

absl::StatusOr<Batch> Loader::Next() {
  const absl::Time start = absl::Now();
  absl::MutexLock lock(&mu_);
  if (cursor_ < 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "loader cursor is ", cursor_, "; Seek to a batch index >= 0 before Next"));
  }
  mu_.Await(absl::Condition(this, &Loader::NextReady));
  wait_seconds_ += absl::ToDoubleSeconds(absl::Now() - start);
  if (!ready_.at(cursor_).ok()) return ready_.at(cursor_).status();
  auto node = ready_.extract(cursor_);
  ++cursor_;
  return std::move(node.mapped());
}

int64_t Loader::cursor() const {
  absl::MutexLock lock(&mu_);
  return cursor_;
}

void Loader::Seek(int64_t cursor) {
  absl::MutexLock lock(&mu_);
  ++generation_;
  ready_.clear();
  cursor_ = cursor;
  next_to_build_ = cursor;
}

double Loader::wait_seconds() const {
  absl::MutexLock lock(&mu_);
  return wait_seconds_;
}

int64_t Loader::windows() const { return source_->windows(); }

int64_t Loader::batches_per_epoch() const { return source_->batches_per_epoch(); }

int64_t Loader::block_windows() const { return source_->block_windows(); }

}  // namespace roboloop::train
