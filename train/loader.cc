#include "train/loader.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/status.h"
#include "train/batch_builder.h"
#include "train/sampling.h"

namespace roboloop::train {
namespace {

absl::Status CheckAtLeastOne(int value, const char* name) {
  if (value >= 1) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("loader ", name, " must be >= 1, got ", value));
}

absl::Status CheckShardOptions(const LoaderOptions& options, int64_t windows) {
  ROBOLOOP_RETURN_IF_ERROR(CheckAtLeastOne(options.batch_size, "batch_size"));
  ROBOLOOP_RETURN_IF_ERROR(CheckAtLeastOne(options.world_size, "world_size"));
  ROBOLOOP_RETURN_IF_ERROR(CheckAtLeastOne(options.num_workers, "num_workers"));
  ROBOLOOP_RETURN_IF_ERROR(CheckAtLeastOne(options.prefetch, "prefetch"));
  if (options.rank < 0 || options.rank >= options.world_size) {
    return absl::InvalidArgumentError(absl::StrCat("loader rank ", options.rank,
                                                   " is outside [0, world_size = ",
                                                   options.world_size, ")"));
  }
  const int64_t global = static_cast<int64_t>(options.batch_size) * options.world_size;
  if (global > windows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "global batch batch_size * world_size = ", options.batch_size, " * ",
        options.world_size, " = ", global, " exceeds the ", windows,
        " windows of the dataset (not one full batch per epoch)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Loader>> Loader::Create(
    std::shared_ptr<const data::EpisodeStore> store, const Normalization& norm,
    const LoaderOptions& options) {
  if (store == nullptr) return absl::InvalidArgumentError("loader: no episode store given");
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<BatchBuilder> builder,
                            BatchBuilder::Create(*store, norm, options));
  ROBOLOOP_RETURN_IF_ERROR(CheckShardOptions(options, builder->windows()));
  return std::unique_ptr<Loader>(new Loader(std::move(store), std::move(builder), options));
}

Loader::Loader(std::shared_ptr<const data::EpisodeStore> store,
               std::unique_ptr<BatchBuilder> builder, const LoaderOptions& options)
    : store_(std::move(store)),
      builder_(std::move(builder)),
      options_(options),
      batches_per_epoch_(builder_->windows() /
                         (static_cast<int64_t>(options.batch_size) * options.world_size)) {
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
    const BatchSlice slice = SliceOfBatch(index, batches_per_epoch_, options_.batch_size,
                                          options_.rank, options_.world_size);
    const std::shared_ptr<const std::vector<int64_t>> permutation =
        Permutation(slice.epoch, cursor, cursor + options_.prefetch - 1);
    Batch batch = builder_->Build(
        index, absl::MakeConstSpan(*permutation).subspan(slice.begin, slice.size));
    absl::MutexLock lock(&mu_);
    if (generation == generation_) ready_.emplace(index, std::move(batch));
  }
}

std::shared_ptr<const std::vector<int64_t>> Loader::Permutation(int64_t epoch,
                                                                int64_t first_batch,
                                                                int64_t last_batch) {
  absl::MutexLock lock(&permutations_mu_);
  // Forget the epochs no batch in flight needs (the cursor moved on, or Seek moved it).
  const int64_t first_epoch = first_batch / batches_per_epoch_;
  const int64_t last_epoch = last_batch / batches_per_epoch_;
  for (auto it = permutations_.begin(); it != permutations_.end();) {
    const bool needed = it->first == epoch || (it->first >= first_epoch && it->first <= last_epoch);
    it = needed ? std::next(it) : permutations_.erase(it);
  }
  auto& permutation = permutations_[epoch];
  if (permutation == nullptr) {
    permutation = std::make_shared<const std::vector<int64_t>>(
        EpochPermutation(builder_->windows(), options_.seed, epoch));
  }
  return permutation;
}

absl::StatusOr<Batch> Loader::Next() {
  const absl::Time start = absl::Now();
  absl::MutexLock lock(&mu_);
  if (cursor_ < 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "loader cursor is ", cursor_, "; Seek to a batch index >= 0 before Next"));
  }
  mu_.Await(absl::Condition(this, &Loader::NextReady));
  auto node = ready_.extract(cursor_);
  ++cursor_;
  wait_seconds_ += absl::ToDoubleSeconds(absl::Now() - start);
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

int64_t Loader::windows() const { return builder_->windows(); }

int64_t Loader::batches_per_epoch() const { return batches_per_epoch_; }

}  // namespace roboloop::train
