// A bounded cache of episodes read on demand from one HDF5 dataset, or from the files of a
// dataset set: what a training rank holds when the dataset does not fit in memory (issue 28).
// Torch-free.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "data/dataset_reader.h"
#include "data/episode_store.h"

namespace roboloop::data {

// 1/8 of MemAvailable (/proc/meminfo), or of physical memory where that is unreadable: the
// default size of a training rank's data cache.
int64_t DefaultDataCacheBytes();

// Opens the file (each file of a set) once and reads one episode at a time (all selected
// features, each episode an EpisodeStore of one demo) into a least-recently-used cache of at
// most capacity_bytes. The episodes of a set are those of its files in order, each file's in
// selection order, as EpisodeStore::Load numbers them.
// Thread-safe: any number of threads may call Get. A miss reads without holding the cache's
// lock, so other threads take resident episodes (or read others) meanwhile; HDF5 1.10 runs
// each of its calls under one global lock, so what runs in parallel is the work outside them.
class EpisodeCache {
 public:
  struct Options {
    // The file (and more_paths), features, split, validation and dtype of what is read;
    // `demos` must be empty.
    EpisodeStore::Options episodes;
    int64_t capacity_bytes = 0;  // bytes of episodes held at most; 0 = DefaultDataCacheBytes()
  };

  // What the cache has done so far.
  struct Counters {
    int64_t episodes_read = 0;        // episodes read from the file (misses)
    int64_t bytes_read = 0;           // their bytes as held in memory
    int64_t resident_bytes = 0;       // bytes held now
    int64_t peak_resident_bytes = 0;  // most bytes held at once
  };

  // Opens and validates the files (structure only: values are checked as episodes load) and
  // selects the demos and features. Errors: those of DatasetReader::Open and
  // EpisodeStore::SelectedDemos, an unknown feature, a file of a set whose features differ
  // from the first's (data::CheckSameFeatures), Options::episodes.demos given, and an episode
  // larger than the capacity (naming it, its file, the capacity and --data-cache-mb).
  static absl::StatusOr<std::unique_ptr<EpisodeCache>> Open(const Options& options);

  // The file (of a set: its first file).
  const std::string& path() const { return readers_.front()->path(); }
  // The file of `episode`.
  const std::string& episode_path(int64_t episode) const { return readers_[files_[episode]]->path(); }
  // The capacity in bytes.
  int64_t capacity_bytes() const { return capacity_bytes_; }
  // Selected episodes, in selection order (EpisodeStore::SelectedDemos).
  int64_t num_episodes() const { return static_cast<int64_t>(demos_.size()); }
  // Demo name of `episode`.
  const std::string& demo_name(int64_t episode) const { return demos_[episode]; }
  // Steps of `episode`.
  int64_t episode_length(int64_t episode) const { return lengths_[episode]; }
  // Bytes one step of the selected features takes in memory (float32 with as_float32).
  int64_t step_bytes() const { return step_bytes_; }
  // Bytes all selected episodes would take in memory.
  int64_t total_bytes() const { return total_steps_ * step_bytes_; }
  // Steps of all selected episodes.
  int64_t total_steps() const { return total_steps_; }

  // Episode `episode` (0 <= episode < num_episodes()). On a miss the least recently used
  // episodes are dropped until the episode fits within capacity_bytes beside those held and
  // those other threads are reading (waiting for their reads when it does not fit even so),
  // then it is read (a dropped episode stays valid while a caller still holds it). Once the
  // episodes dropped since the last time add up to capacity_bytes / 8, the free pages of the
  // process's heap are handed back to the system (malloc_trim), so that freed episodes held by
  // glibc stay within about an eighth of the capacity. A thread
  // asking for an episode another thread is reading waits for that read and takes its episode
  // (reading it itself when that read failed). Errors: the load's (I/O,
  // NaN/Inf under a strict policy, float32 range), naming the file and demo; when the file's
  // size is no longer what it was when the cache opened it (truncated or rewritten while
  // training streams from it), the error says so.
  absl::StatusOr<std::shared_ptr<const EpisodeStore>> Get(int64_t episode);

  // Counters so far.
  Counters counters() const;

 private:
  EpisodeCache(std::vector<std::unique_ptr<DatasetReader>> readers, EpisodeStore::Options episodes,
               std::vector<int> files, std::vector<std::string> demos, int64_t step_bytes,
               int64_t capacity_bytes);

  // Drops the least recently used episodes until `bytes` more fit beside those held and those
  // being read (or none is left); returns the bytes dropped.
  int64_t EvictFor(int64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // `status`, a failed read of `episode`, with a note when its file's size changed since Open.
  absl::Status NoteChangedFile(const absl::Status& status, int64_t episode) const;

  struct Entry {
    std::shared_ptr<const EpisodeStore> store;
    std::list<int64_t>::iterator recency;  // position in recency_
  };

  const std::vector<std::unique_ptr<DatasetReader>> readers_;
  const EpisodeStore::Options episodes_;
  const std::vector<int> files_;  // index in readers_ of each episode's file
  std::vector<int64_t> file_bytes_;  // size of each file of readers_ when opened (-1: unknown)
  const std::vector<std::string> demos_;
  std::vector<int64_t> lengths_;
  int64_t total_steps_ = 0;
  const int64_t step_bytes_;
  const int64_t capacity_bytes_;

  mutable absl::Mutex mu_;
  std::unordered_map<int64_t, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::list<int64_t> recency_ ABSL_GUARDED_BY(mu_);  // most recently used first
  std::unordered_set<int64_t> reading_ ABSL_GUARDED_BY(mu_);  // episodes being read
  int64_t reserved_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // bytes of the episodes being read
  Counters counters_ ABSL_GUARDED_BY(mu_);
  int64_t evicted_since_trim_ ABSL_GUARDED_BY(mu_) = 0;  // bytes dropped since the last malloc_trim
};

}  // namespace roboloop::data
