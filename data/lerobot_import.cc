#include "data/lerobot_import.h"

#include <fcntl.h>
#include <sys/file.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/fs.h"
#include "common/ids.h"
#include "common/status.h"
#include "data/dataset_writer.h"
#include "data/lerobot_format.h"
#include "data/lerobot_parquet.h"
#include "data/lerobot_video.h"
#include "data/run_ahead.h"
#include "spdlog/spdlog.h"

namespace roboloop::data {
namespace {

using lerobot::ParquetTable;

// An open descriptor of `path` (created when missing) holding an exclusive flock, waiting for
// other holders. A file system without locks (flock fails with ENOLCK) gives an unlocked
// descriptor with a warning: callers must stay correct without the lock.
absl::StatusOr<UniqueFd> LockExclusively(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!fd.valid()) return ErrnoStatus(errno, absl::StrCat("cannot open the lock file ", path));
  while (::flock(fd.get(), LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    if (errno == ENOLCK) {
      spdlog::warn("{}: the file system takes no locks; concurrent imports of one dataset each import it", path);
      break;
    }
    return ErrnoStatus(errno, absl::StrCat("cannot lock ", path));
  }
  return fd;
}

// A numeric feature of info.json and where it goes.
struct NumericFeature {
  std::string key;      // LeRobot key, e.g. "observation.state"
  std::string feature;  // robomimic name, e.g. "obs/state"
  DType dtype = DType::kFloat32;
  int64_t width = 1;    // values per frame
  bool rank_one = false;  // stored [T] (rewards, dones) rather than [T, width]
};

// A video feature of info.json.
struct CameraFeature {
  std::string key;      // e.g. "observation.images.front"
  std::string feature;  // e.g. "obs/front_image"
  int64_t height = 0;
  int64_t width = 0;
};

struct Plan {
  std::vector<NumericFeature> numeric;
  std::vector<CameraFeature> cameras;
  std::string data_path;
  std::string video_path;
  double fps = 0;
};

// One row of the episodes tables.
struct EpisodeRef {
  int64_t index = 0;
  int64_t length = 0;
  int64_t data_chunk = 0;
  int64_t data_file = 0;
  int64_t from_index = 0;
  std::vector<std::string> tasks;
  std::map<std::string, std::pair<std::string, double>> videos;  // camera key -> (file, from_timestamp)
};

absl::StatusOr<DType> NumericDType(const std::string& dtype) {
  static const std::map<std::string, DType> kTypes = {
      {"float32", DType::kFloat32}, {"float64", DType::kFloat64}, {"int8", DType::kInt8},
      {"uint8", DType::kUint8},     {"int16", DType::kInt16},     {"int32", DType::kInt32},
      {"int64", DType::kInt64},     {"bool", DType::kUint8}};
  auto it = kTypes.find(dtype);
  if (it == kTypes.end()) return absl::InvalidArgumentError(absl::StrCat("dtype '", dtype, "'"));
  return it->second;
}

absl::Status Refuse(const std::string& info_path, const std::string& key, const std::string& why) {
  return absl::UnimplementedError(absl::StrCat(info_path, ": feature '", key, "': ", why,
                                               "; roboloop imports numeric features of shape [n] and video cameras"));
}

// The file `relative` (from the template `field` of info.json, data_path or video_path) names in
// the dataset folder `dir`; InvalidArgument naming info.json, the field and the path when it leaves
// the folder (an absolute path, a ".." component, or a symbolic link out of it).
absl::StatusOr<std::string> FileInDataset(const std::string& dir, const std::string& field,
                                          const std::string& relative) {
  const std::string path = JoinPath(dir, relative);
  if (CheckSafeRelativePath(relative).ok() && PathIsWithin(path, dir)) return path;
  return absl::InvalidArgumentError(absl::StrCat(JoinPath(dir, lerobot::kInfoPath), ": ", field, " gives '", relative,
                                                 "', which leaves the dataset folder ", dir));
}

absl::StatusOr<Plan> PlanFeatures(const std::string& dir, const nlohmann::json& info) {
  const std::string info_path = JoinPath(dir, lerobot::kInfoPath);
  Plan plan;
  plan.fps = info["fps"].get<double>();
  plan.data_path = info.value("data_path", lerobot::kDataPathTemplate);
  plan.video_path = info["video_path"].is_string() ? info["video_path"].get<std::string>() : lerobot::kVideoPathTemplate;
  const auto& bookkeeping = lerobot::BookkeepingKeys();
  for (const auto& [key, spec] : info["features"].items()) {
    const std::string dtype = spec.value("dtype", "");
    const std::vector<int64_t> shape = spec.value("shape", std::vector<int64_t>{});
    if (dtype == "video") {
      if (shape.size() != 3 || shape[2] != 3) return Refuse(info_path, key, "a video whose shape is not [H, W, 3]");
      plan.cameras.push_back({key, absl::StrCat("obs/", lerobot::CameraNameOf(key), "_image"), shape[0], shape[1]});
      continue;
    }
    if (dtype == "image" || dtype == "string") return Refuse(info_path, key, absl::StrCat("dtype ", dtype));
    absl::StatusOr<DType> type = NumericDType(dtype);
    if (!type.ok()) return Refuse(info_path, key, std::string(type.status().message()));
    if (shape.size() != 1 || shape[0] <= 0) return Refuse(info_path, key, "a shape of rank other than 1");
    const bool is_bookkeeping = std::find(bookkeeping.begin(), bookkeeping.end(), key) != bookkeeping.end();
    if (is_bookkeeping && key != "timestamp" && key != "task_index") continue;  // derived from the demos
    NumericFeature feature{key, is_bookkeeping ? "obs/" + key : lerobot::FeatureNameOf(key), *type, shape[0]};
    feature.rank_one = feature.feature == "rewards" || feature.feature == "dones";
    if (feature.rank_one && shape[0] != 1) return Refuse(info_path, key, "a reward or done of more than one value");
    plan.numeric.push_back(feature);
  }
  if (std::none_of(plan.numeric.begin(), plan.numeric.end(), [](const NumericFeature& f) { return f.key == "action"; })) {
    return absl::InvalidArgumentError(absl::StrCat(info_path, ": no 'action' feature"));
  }
  ROBOLOOP_RETURN_IF_ERROR(FileInDataset(dir, "data_path", lerobot::FormatPath(plan.data_path, 0, 0)).status());
  for (const CameraFeature& camera : plan.cameras) {
    ROBOLOOP_RETURN_IF_ERROR(
        FileInDataset(dir, "video_path", lerobot::FormatPath(plan.video_path, 0, 0, camera.key)).status());
  }
  return plan;
}

absl::StatusOr<std::vector<EpisodeRef>> ReadEpisodes(const std::string& dir, const Plan& plan) {
  std::vector<std::string> files;
  std::error_code error;
  const std::string episodes_dir = JoinPath(dir, lerobot::kEpisodesDir);
  for (auto it = std::filesystem::recursive_directory_iterator(episodes_dir, error);
       !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    if (it->is_regular_file() && it->path().extension() == ".parquet") files.push_back(it->path().string());
  }
  if (error) return ErrnoStatus(error.value(), episodes_dir);
  if (files.empty()) return absl::NotFoundError(absl::StrCat(episodes_dir, ": no episode tables (*.parquet)"));
  std::sort(files.begin(), files.end());
  std::vector<EpisodeRef> episodes;
  for (const std::string& file : files) {
    ROBOLOOP_ASSIGN_OR_RETURN(ParquetTable table, lerobot::ReadParquet(file));
    ROBOLOOP_ASSIGN_OR_RETURN(auto index, lerobot::Int64Column(table, "episode_index"));
    ROBOLOOP_ASSIGN_OR_RETURN(auto length, lerobot::Int64Column(table, "length"));
    ROBOLOOP_ASSIGN_OR_RETURN(auto chunk, lerobot::Int64Column(table, "data/chunk_index"));
    ROBOLOOP_ASSIGN_OR_RETURN(auto file_index, lerobot::Int64Column(table, "data/file_index"));
    ROBOLOOP_ASSIGN_OR_RETURN(auto from, lerobot::Int64Column(table, "dataset_from_index"));
    ROBOLOOP_ASSIGN_OR_RETURN(auto tasks, lerobot::StringListColumn(table, "tasks"));
    const size_t first = episodes.size();
    for (size_t i = 0; i < index.size(); ++i) {
      episodes.push_back({index[i], length[i], chunk[i], file_index[i], from[i], tasks[i], {}});
    }
    for (const CameraFeature& camera : plan.cameras) {
      const std::string prefix = absl::StrCat("videos/", camera.key, "/");
      ROBOLOOP_ASSIGN_OR_RETURN(auto video_chunk, lerobot::Int64Column(table, prefix + "chunk_index"));
      ROBOLOOP_ASSIGN_OR_RETURN(auto video_file, lerobot::Int64Column(table, prefix + "file_index"));
      ROBOLOOP_ASSIGN_OR_RETURN(auto video_from, lerobot::DoubleColumn(table, prefix + "from_timestamp"));
      for (size_t i = 0; i < index.size(); ++i) {
        ROBOLOOP_ASSIGN_OR_RETURN(
            std::string video,
            FileInDataset(dir, "video_path", lerobot::FormatPath(plan.video_path, video_chunk[i], video_file[i], camera.key)));
        episodes[first + i].videos[camera.key] = {std::move(video), video_from[i]};
      }
    }
  }
  std::sort(episodes.begin(), episodes.end(), [](const EpisodeRef& a, const EpisodeRef& b) { return a.index < b.index; });
  return episodes;
}

// Reads the data tables and videos of a dataset, keeping the last file of each open.
class Source {
 public:
  Source(std::string dir, const Plan& plan) : dir_(std::move(dir)), plan_(plan) {}

  // The first row of `episode` in its data table, checked against the table's index column.
  absl::StatusOr<int64_t> LocateRows(const EpisodeRef& episode) {
    ROBOLOOP_ASSIGN_OR_RETURN(
        const std::string path,
        FileInDataset(dir_, "data_path", lerobot::FormatPath(plan_.data_path, episode.data_chunk, episode.data_file)));
    if (table_.path != path) {
      ROBOLOOP_ASSIGN_OR_RETURN(table_, lerobot::ReadParquet(path));
      ROBOLOOP_ASSIGN_OR_RETURN(index_, lerobot::Int64Column(table_, "index"));
    }
    auto first = std::lower_bound(index_.begin(), index_.end(), episode.from_index);
    const int64_t row = first - index_.begin();
    if (first == index_.end() || *first != episode.from_index || row + episode.length > static_cast<int64_t>(index_.size()) ||
        index_[row + episode.length - 1] != episode.from_index + episode.length - 1) {
      return absl::OutOfRangeError(absl::StrCat(
          path, ": episode ", episode.index, " has rows with index [", episode.from_index, ", ",
          episode.from_index + episode.length, ") (meta/episodes), which this table does not hold (its index spans [",
          index_.empty() ? 0 : index_.front(), ", ", index_.empty() ? 0 : index_.back() + 1, "))"));
    }
    return row;
  }

  // Rows [row, row + count) of every numeric feature and the matching camera frames, frames
  // [first_frame, first_frame + count) of `episode`. A frame that cannot be read is an error
  // naming its camera feature, episode and frame index before the video's own error.
  absl::StatusOr<Episode> ReadBlock(const EpisodeRef& episode, int64_t row, int64_t first_frame, int64_t count,
                                    int64_t* frames) {
    Episode block;
    for (const NumericFeature& feature : plan_.numeric) {
      ROBOLOOP_ASSIGN_OR_RETURN(block[feature.feature],
                                lerobot::NumericRows(table_, feature.key, row, count, feature.width, feature.dtype));
      if (feature.rank_one) block[feature.feature].shape = {count};
    }
    if (plan_.cameras.empty()) return block;
    ROBOLOOP_ASSIGN_OR_RETURN(Array timestamps, lerobot::NumericRows(table_, "timestamp", row, count, 1, DType::kFloat32));
    for (const CameraFeature& camera : plan_.cameras) {
      const auto& [path, from_timestamp] = episode.videos.at(camera.key);
      ROBOLOOP_ASSIGN_OR_RETURN(lerobot::VideoReader * video, Video(camera.key, path));
      if (video->height() != camera.height || video->width() != camera.width) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": frames of ", video->width(), "x", video->height(),
                                                       ", info.json says ", camera.width, "x", camera.height));
      }
      const absl::Span<const float> times = timestamps.Values<float>();
      const int64_t frame_bytes = int64_t{camera.height} * camera.width * 3;
      Array images = Array::Zeros(DType::kUint8, {count, camera.height, camera.width, 3});
      for (int64_t k = 0; k < count; ++k) {
        const absl::Status read = video->ReadFrames({from_timestamp + times[k]}, lerobot::kTimestampToleranceS,
                                                    images.bytes.data() + k * frame_bytes);
        ROBOLOOP_RETURN_IF_ERROR(Annotate(read, absl::StrCat(camera.key, ", episode ", episode.index, ", frame ",
                                                             first_frame + k)));
      }
      block[camera.feature] = std::move(images);
      *frames += count;
    }
    return block;
  }

  // Bytes of one row of every feature.
  int64_t RowBytes() const {
    int64_t bytes = 0;
    for (const NumericFeature& feature : plan_.numeric) bytes += feature.width * DTypeSize(feature.dtype);
    for (const CameraFeature& camera : plan_.cameras) bytes += camera.height * camera.width * 3;
    return bytes;
  }

 private:
  absl::StatusOr<lerobot::VideoReader*> Video(const std::string& key, const std::string& path) {
    auto& [open_path, reader] = videos_[key];
    if (open_path != path || reader == nullptr) {
      ROBOLOOP_ASSIGN_OR_RETURN(reader, lerobot::VideoReader::Open(path));
      open_path = path;
    }
    return reader.get();
  }

  std::string dir_;
  const Plan& plan_;
  ParquetTable table_;
  std::vector<int64_t> index_;
  std::map<std::string, std::pair<std::string, std::unique_ptr<lerobot::VideoReader>>> videos_;
};

// A block of consecutive rows of one episode, as the writer takes it.
struct SourceBlock {
  size_t episode = 0;   // index into the episodes being imported
  bool first = false;   // the episode's first block
  bool last = false;    // the episode's last block
  Episode rows;
  int64_t frames = 0;   // video frames decoded for it
};

// Cancelled, naming the import of `dir`, once `cancel` (may be null) is cancelled; else OK.
absl::Status CheckNotCancelled(const std::string& dir, const common::CancellationToken* cancel) {
  if (!common::IsCancelled(cancel)) return absl::OkStatus();
  return absl::CancelledError(absl::StrCat("import of ", dir, " cancelled (", cancel->Reason(), ")"));
}

// The blocks of every episode in order, at most `block_rows` rows each, read from `source`.
class BlockReader {
 public:
  BlockReader(std::string dir, Source* source, const std::vector<EpisodeRef>& episodes, int64_t block_rows,
              const common::CancellationToken* cancel)
      : dir_(std::move(dir)), source_(source), episodes_(episodes), block_rows_(block_rows), cancel_(cancel) {}

  // The next block, nullopt after the last; errors name the file (Source) or the episode; Cancelled once
  // the token is.
  absl::StatusOr<std::optional<SourceBlock>> Next() {
    ROBOLOOP_RETURN_IF_ERROR(CheckNotCancelled(dir_, cancel_));
    if (episode_ == episodes_.size()) return std::optional<SourceBlock>();
    const EpisodeRef& episode = episodes_[episode_];
    if (done_ == 0) {
      if (episode.length <= 0) {
        return absl::InvalidArgumentError(absl::StrCat(dir_, "/", lerobot::kEpisodesDir, ": episode ", episode.index,
                                                       " has length ", episode.length));
      }
      ROBOLOOP_ASSIGN_OR_RETURN(first_row_, source_->LocateRows(episode));
    }
    const int64_t count = std::min(block_rows_, episode.length - done_);
    SourceBlock block;
    block.episode = episode_;
    block.first = done_ == 0;
    block.last = done_ + count == episode.length;
    ROBOLOOP_ASSIGN_OR_RETURN(block.rows, source_->ReadBlock(episode, first_row_ + done_, done_, count, &block.frames));
    done_ = block.last ? 0 : done_ + count;
    if (block.last) ++episode_;
    return std::optional<SourceBlock>(std::move(block));
  }

 private:
  std::string dir_;
  Source* source_;
  const std::vector<EpisodeRef>& episodes_;
  int64_t block_rows_;
  const common::CancellationToken* cancel_;
  size_t episode_ = 0;     // the episode being read
  int64_t done_ = 0;       // its rows read so far
  int64_t first_row_ = 0;  // its first row in its data table
};

// The env_args an export kept in info.json (lerobot::kEnvArgsField), else those of a dataset from elsewhere:
// env_name "lerobot". InvalidArgument naming info.json when the kept ones are not an object, or their
// env_kwargs.obs_keys name an observation the dataset has no numeric feature for.
absl::StatusOr<nlohmann::json> KeptEnvArgs(const std::string& dir, const nlohmann::json& info, const Plan& plan) {
  if (!info.contains(lerobot::kEnvArgsField)) return nlohmann::json{{"env_name", "lerobot"}};
  const std::string where = absl::StrCat(JoinPath(dir, lerobot::kInfoPath), ": ", lerobot::kEnvArgsField);
  const nlohmann::json& kept = info[lerobot::kEnvArgsField];
  const nlohmann::json kwargs = kept.is_object() ? kept.value("env_kwargs", nlohmann::json::object()) : nlohmann::json();
  if (!kwargs.is_object()) return absl::InvalidArgumentError(absl::StrCat(where, " is not an object with object env_kwargs"));
  for (const nlohmann::json& key : kwargs.value("obs_keys", nlohmann::json::array())) {
    const auto imported = std::find_if(plan.numeric.begin(), plan.numeric.end(), [&](const NumericFeature& f) {
      return key.is_string() && f.feature == "obs/" + key.get<std::string>();
    });
    if (imported == plan.numeric.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " env_kwargs.obs_keys names ", key.dump(), ", but no feature imports as obs/<that key>"));
    }
  }
  return kept;
}

absl::StatusOr<nlohmann::json> EnvArgs(const std::string& dir, const nlohmann::json& info, const Plan& plan,
                                       const std::vector<std::string>& tasks, const std::vector<EpisodeRef>& episodes) {
  ROBOLOOP_ASSIGN_OR_RETURN(nlohmann::json env, KeptEnvArgs(dir, info, plan));
  nlohmann::json obs_keys = nlohmann::json::array();
  nlohmann::json features = nlohmann::json::object();
  for (const NumericFeature& feature : plan.numeric) {
    if (absl::StartsWith(feature.key, "observation.")) obs_keys.push_back(feature.feature.substr(4));
  }
  for (const auto& item : info["features"].items()) {
    const std::string& key = item.key();
    const auto numeric = std::find_if(plan.numeric.begin(), plan.numeric.end(), [&](const NumericFeature& f) { return f.key == key; });
    const auto camera = std::find_if(plan.cameras.begin(), plan.cameras.end(), [&](const CameraFeature& c) { return c.key == key; });
    nlohmann::json entry = item.value();
    if (numeric != plan.numeric.end()) entry["roboloop_feature"] = numeric->feature;
    if (camera != plan.cameras.end()) entry["roboloop_feature"] = camera->feature;
    features[key] = entry;
  }
  nlohmann::json episode_list = nlohmann::json::array();
  for (const EpisodeRef& episode : episodes) episode_list.push_back({{"episode_index", episode.index}, {"tasks", episode.tasks}});
  if (!env["env_kwargs"].contains("obs_keys")) env["env_kwargs"]["obs_keys"] = obs_keys;
  env["lerobot"] = {{"source", dir},
                    {"fps", info["fps"]},
                    {"robot_type", info.value("robot_type", nlohmann::json())},
                    {"tasks", tasks},
                    {"episodes", episode_list},
                    {"features", features}};
  return env;
}

absl::StatusOr<std::vector<std::string>> ReadTasks(const std::string& dir) {
  ROBOLOOP_ASSIGN_OR_RETURN(ParquetTable table, lerobot::ReadParquet(JoinPath(dir, lerobot::kTasksPath)));
  ROBOLOOP_ASSIGN_OR_RETURN(auto indices, lerobot::Int64Column(table, "task_index"));
  // pandas keeps the task strings as the frame's index (a column "__index_level_0__" or "task").
  const std::string column = table.table->GetColumnByName("task") != nullptr ? "task" : "__index_level_0__";
  ROBOLOOP_ASSIGN_OR_RETURN(auto strings, lerobot::StringColumn(table, column));
  std::vector<std::string> tasks(indices.size());
  for (size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] < 0 || indices[i] >= static_cast<int64_t>(indices.size())) {
      return absl::InvalidArgumentError(absl::StrCat(table.path, ": task_index ", indices[i], " out of range"));
    }
    tasks[indices[i]] = strings[i];
  }
  return tasks;
}

// `path`, a cached import found in place, its write permissions taken off where this user
// owns it (MakeOwnFileReadOnly).
absl::StatusOr<std::string> MadeReadOnly(const std::string& path) {
  ROBOLOOP_RETURN_IF_ERROR(MakeOwnFileReadOnly(path));
  return path;
}

}  // namespace

absl::StatusOr<LeRobotImportResult> ImportLeRobot(const LeRobotImportOptions& options) {
  const std::string& dir = options.input_dir;
  ROBOLOOP_ASSIGN_OR_RETURN(nlohmann::json info, lerobot::ReadInfo(dir));
  ROBOLOOP_ASSIGN_OR_RETURN(Plan plan, PlanFeatures(dir, info));
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::string> tasks, ReadTasks(dir));
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<EpisodeRef> episodes, ReadEpisodes(dir, plan));
  LeRobotImportResult result;
  result.lineage.operation = "import_lerobot";
  std::vector<std::pair<std::string, std::string>> files;
  ROBOLOOP_RETURN_IF_ERROR(lerobot::FolderDigest(dir, &files).status());
  for (const auto& [file, sha256] : files) result.lineage.parents.push_back({"lerobot_file", JoinPath(dir, file), sha256});
  for (const NumericFeature& f : plan.numeric) result.features.push_back(absl::StrCat(f.key, " -> ", f.feature));
  for (const CameraFeature& c : plan.cameras) result.features.push_back(absl::StrCat(c.key, " -> ", c.feature));

  DatasetWriter::Options writer_options;
  writer_options.path = options.output_path;
  ROBOLOOP_ASSIGN_OR_RETURN(const nlohmann::json env_args, EnvArgs(dir, info, plan, tasks, episodes));
  writer_options.env_args_json = env_args.dump();
  writer_options.lineage = result.lineage;
  writer_options.storage = options.storage;
  writer_options.overwrite = options.overwrite;
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<DatasetWriter> writer, DatasetWriter::Create(writer_options));
  Source source(dir, plan);
  const int64_t block_rows = std::max<int64_t>(1, options.max_block_bytes / std::max<int64_t>(1, source.RowBytes()));
  BlockReader reader(dir, &source, episodes, block_rows, options.cancel);
  // Block k + 1 is read and decoded while block k is compressed and written.
  RunAhead<SourceBlock> blocks([&reader] { return reader.Next(); });
  while (true) {
    ROBOLOOP_ASSIGN_OR_RETURN(std::optional<SourceBlock> block, blocks.Next());
    if (!block.has_value()) break;
    ROBOLOOP_RETURN_IF_ERROR(CheckNotCancelled(dir, options.cancel));
    if (block->first) ROBOLOOP_RETURN_IF_ERROR(writer->BeginEpisode());
    ROBOLOOP_RETURN_IF_ERROR(writer->Append(block->rows));
    result.frames_decoded += block->frames;
    if (block->last) {
      ROBOLOOP_RETURN_IF_ERROR(writer->EndEpisode().status());
      result.total_steps += episodes[block->episode].length;
      ++result.num_episodes;
    }
  }
  ROBOLOOP_RETURN_IF_ERROR(writer->Close());
  return result;
}

absl::StatusOr<std::string> ImportLeRobotCached(const std::string& dir, const std::string& cache_dir) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::string digest, lerobot::FolderDigest(dir, nullptr));
  const std::string path = JoinPath(cache_dir, absl::StrCat("lerobot-", digest, ".hdf5"));
  // A file an older roboloop left writable becomes read-only too.
  if (PathExists(path)) return MadeReadOnly(path);
  ROBOLOOP_RETURN_IF_ERROR(MakeDirs(cache_dir));
  // Every rank of a job imports its datasets, on every node: the first to lock imports, the
  // others wait and then find its file.
  ROBOLOOP_ASSIGN_OR_RETURN(const UniqueFd lock, LockExclusively(absl::StrCat(path, ".lock")));
  if (PathExists(path)) return MadeReadOnly(path);
  LeRobotImportOptions options;
  options.input_dir = dir;
  // A name of this import's own, so that imports that do not see each other's lock (a file
  // system that ignores flock) never write one file.
  options.output_path = absl::StrCat(path, ".import-", NewUuid());
  ROBOLOOP_RETURN_IF_ERROR(ImportLeRobot(options).status());
  // Read-only before it is in place (a rename replaces a read-only file all the same).
  absl::Status renamed = MakeReadOnly(options.output_path);
  if (renamed.ok()) renamed = RenameDurable(options.output_path, path);
  if (!renamed.ok()) std::remove(options.output_path.c_str());
  ROBOLOOP_RETURN_IF_ERROR(renamed);
  return path;
}

}  // namespace roboloop::data
