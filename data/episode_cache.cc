#include "data/episode_cache.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace roboloop::data {
namespace {

// glibc keeps freed episode buffers in the arena of the thread that allocated them (one per
// loader worker), where another worker's next episode may not reuse them; malloc_trim hands the
// free pages back once evictions since the last trim reach capacity / kTrimDivisor. Trimming
// after every eviction instead made each new episode (and batch) fault in fresh pages: a third
// of the streaming loader's time (docs/BENCHMARKS.md, "Image loader").
constexpr int64_t kTrimDivisor = 8;

// MemAvailable of /proc/meminfo in bytes, or 0 when it cannot be read.
int64_t MemAvailableBytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    std::istringstream fields(line);
    std::string key;
    int64_t kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

// Bytes of one step of the selected features as EpisodeStore holds them.
int64_t StepBytes(const DatasetLayout& layout, const EpisodeStore::Options& options) {
  std::vector<FeatureSpec> features;
  if (options.features.empty()) {
    features = layout.spec;
  } else {
    for (const std::string& name : options.features) features.push_back(*FindFeature(layout.spec, name));
  }
  int64_t bytes = 0;
  for (const FeatureSpec& feature : features) {
    const bool converted = options.as_float32 && !IsImageKey(feature.name);
    int64_t row = converted ? int64_t{sizeof(float)} : DTypeSize(feature.dtype);
    for (int64_t dim : feature.step_shape) row *= dim;
    bytes += row;
  }
  return bytes;
}

// The size of the file at `path`, or -1 when it cannot be had.
int64_t FileBytes(const std::string& path) {
  std::error_code error;
  const std::uintmax_t bytes = std::filesystem::file_size(path, error);
  return error ? -1 : static_cast<int64_t>(bytes);
}

// Opens `path`, one file of `episodes`, and checks that its split and features exist.
absl::StatusOr<std::unique_ptr<DatasetReader>> OpenFile(const EpisodeStore::Options& episodes,
                                                        const std::string& path) {
  DatasetReader::Options reader_options;
  reader_options.path = path;
  reader_options.validation = episodes.validation;
  reader_options.validation.scan_values = false;  // each episode's values are checked as it loads
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<DatasetReader> reader, DatasetReader::Open(reader_options));
  ROBOLOOP_RETURN_IF_ERROR(EpisodeStore::EstimateBytes(reader->layout(), episodes.ForFile(path)).status());
  return reader;
}

}  // namespace

int64_t DefaultDataCacheBytes() {
  const int64_t available = MemAvailableBytes();
  if (available > 0) return available / 8;
  return static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE) / 8;
}

absl::StatusOr<std::unique_ptr<EpisodeCache>> EpisodeCache::Open(const Options& options) {
  const EpisodeStore::Options& episodes = options.episodes;
  if (!episodes.demos.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(episodes.path, ": an episode cache selects demos by split, not by a list"));
  }
  std::vector<std::string> paths = {episodes.path};
  paths.insert(paths.end(), episodes.more_paths.begin(), episodes.more_paths.end());
  std::vector<std::unique_ptr<DatasetReader>> readers;
  std::vector<int> files;
  std::vector<std::string> demos;
  for (const std::string& path : paths) {
    ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<DatasetReader> reader, OpenFile(episodes, path));
    if (!readers.empty()) {
      const DatasetReader& first = *readers.front();
      ROBOLOOP_RETURN_IF_ERROR(CheckSameFeatures(first.path(), first.layout().spec, path, reader->layout().spec,
                                                 episodes.features));
    }
    ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::string> selected,
                              EpisodeStore::SelectedDemos(reader->layout(), episodes.ForFile(path)));
    for (std::string& demo : selected) {
      files.push_back(static_cast<int>(readers.size()));
      demos.push_back(std::move(demo));
    }
    readers.push_back(std::move(reader));
  }
  const int64_t step_bytes = StepBytes(readers.front()->layout(), episodes);
  const int64_t capacity =
      options.capacity_bytes > 0 ? options.capacity_bytes : DefaultDataCacheBytes();
  std::unique_ptr<EpisodeCache> cache(new EpisodeCache(std::move(readers), episodes, std::move(files),
                                                       std::move(demos), step_bytes, capacity));
  for (int64_t e = 0; e < cache->num_episodes(); ++e) {
    const int64_t bytes = cache->episode_length(e) * step_bytes;
    if (bytes > capacity) {
      return absl::ResourceExhaustedError(absl::StrCat(
          cache->episode_path(e), ": episode ", cache->demo_name(e), " takes ", bytes,
          " bytes in memory, more than the data cache of ", capacity,
          " bytes (raise --data-cache-mb)"));
    }
  }
  return cache;
}

EpisodeCache::EpisodeCache(std::vector<std::unique_ptr<DatasetReader>> readers, EpisodeStore::Options episodes,
                           std::vector<int> files, std::vector<std::string> demos, int64_t step_bytes,
                           int64_t capacity_bytes)
    : readers_(std::move(readers)),
      episodes_(std::move(episodes)),
      files_(std::move(files)),
      demos_(std::move(demos)),
      step_bytes_(step_bytes),
      capacity_bytes_(capacity_bytes) {
  for (const std::unique_ptr<DatasetReader>& reader : readers_) file_bytes_.push_back(FileBytes(reader->path()));
  for (size_t e = 0; e < demos_.size(); ++e) {
    lengths_.push_back(readers_[files_[e]]->layout().FindDemo(demos_[e])->num_samples);
    total_steps_ += lengths_.back();
  }
}

absl::StatusOr<std::shared_ptr<const EpisodeStore>> EpisodeCache::Get(int64_t episode) {
  ROBOLOOP_CHECK(episode >= 0 && episode < num_episodes());
  const int64_t bytes = lengths_[episode] * step_bytes_;
  absl::ReleasableMutexLock lock(&mu_);
  // Waits while another thread reads this episode (its result is taken rather than read
  // twice), and, for a miss, until the episodes being read leave room for this one: room is
  // reserved before the read, so that those held and those being read never exceed the
  // capacity together.
  const auto ready = [this, episode, bytes] {
    return reading_.count(episode) == 0 &&
           (entries_.count(episode) > 0 || reserved_bytes_ + bytes <= capacity_bytes_);
  };
  mu_.Await(absl::Condition(&ready));
  if (auto found = entries_.find(episode); found != entries_.end()) {
    recency_.splice(recency_.begin(), recency_, found->second.recency);
    return found->second.store;
  }
  evicted_since_trim_ += EvictFor(bytes);
  const bool trim = evicted_since_trim_ >= capacity_bytes_ / kTrimDivisor;
  if (trim) evicted_since_trim_ = 0;
  reserved_bytes_ += bytes;
  reading_.insert(episode);
  lock.Release();
  if (trim) malloc_trim(0);
  EpisodeStore::Options one = episodes_.ForFile(episode_path(episode));
  one.split.clear();
  one.demos = {demos_[episode]};
  absl::StatusOr<std::unique_ptr<EpisodeStore>> loaded = EpisodeStore::LoadFromReader(*readers_[files_[episode]], one);

  absl::MutexLock relock(&mu_);
  reading_.erase(episode);
  reserved_bytes_ -= bytes;
  if (!loaded.ok()) return NoteChangedFile(loaded.status(), episode);
  std::shared_ptr<const EpisodeStore> store(std::move(loaded).value());
  recency_.push_front(episode);
  entries_[episode] = Entry{store, recency_.begin()};
  counters_.episodes_read += 1;
  counters_.bytes_read += store->memory_bytes();
  counters_.resident_bytes += store->memory_bytes();
  counters_.peak_resident_bytes = std::max(counters_.peak_resident_bytes, counters_.resident_bytes);
  return store;
}

absl::Status EpisodeCache::NoteChangedFile(const absl::Status& status, int64_t episode) const {
  const int64_t opened = file_bytes_[files_[episode]];
  const int64_t now = FileBytes(episode_path(episode));
  if (now == opened) return status;
  return absl::Status(status.code(), absl::StrCat(status.message(), " (", episode_path(episode), " was ", opened,
                                                  " bytes when training opened it and is ", now,
                                                  " now: it changed while being read)"));
}

int64_t EpisodeCache::EvictFor(int64_t bytes) {
  int64_t evicted_bytes = 0;
  while (!recency_.empty() && counters_.resident_bytes + reserved_bytes_ + bytes > capacity_bytes_) {
    auto evicted = entries_.find(recency_.back());
    counters_.resident_bytes -= evicted->second.store->memory_bytes();
    evicted_bytes += evicted->second.store->memory_bytes();
    entries_.erase(evicted);
    recency_.pop_back();
  }
  return evicted_bytes;
}

EpisodeCache::Counters EpisodeCache::counters() const {
  absl::MutexLock lock(&mu_);
  return counters_;
}

}  // namespace roboloop::data
