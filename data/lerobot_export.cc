#include "data/lerobot_export.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/fs.h"
#include "common/status.h"
#include "data/dataset_reader.h"
#include "data/lerobot_format.h"
#include "data/lerobot_parquet.h"
#include "data/lerobot_video.h"
#include "data/stats.h"
#include "data/tools.h"

namespace roboloop::data {
namespace {

// A robomimic feature and the LeRobot feature it becomes.
struct Target {
  std::string feature;  // e.g. "obs/state"
  std::string key;      // e.g. "observation.state"
  FeatureSpec spec;
  bool video = false;
  bool as_bool = false;  // written as a bool column (next.done, or a LeRobot bool)
  nlohmann::json names;  // info.json "names"
};

absl::Status Refuse(const std::string& input, const std::string& feature, const std::string& why) {
  return absl::UnimplementedError(absl::StrCat(input, ": feature '", feature, "': ", why));
}

// The LeRobot features recorded by an import: robomimic feature -> (key, info.json entry).
std::map<std::string, std::pair<std::string, nlohmann::json>> ImportedFeatures(const nlohmann::json& env) {
  std::map<std::string, std::pair<std::string, nlohmann::json>> imported;
  const nlohmann::json features = env.value("/lerobot/features"_json_pointer, nlohmann::json::object());
  for (const auto& [key, entry] : features.items()) {
    if (entry.contains("roboloop_feature")) imported[entry["roboloop_feature"].get<std::string>()] = {key, entry};
  }
  return imported;
}

std::string DefaultKey(const std::string& feature, bool* video) {
  *video = false;
  if (feature == "actions") return "action";
  if (feature == "rewards") return "next.reward";
  if (feature == "dones") return "next.done";
  if (feature == "states") return "states";
  const std::string key = feature.substr(4);  // obs/<k>
  if (key == "timestamp" || key == "task_index") return key;
  if (absl::EndsWith(key, "_image")) {
    *video = true;
    return absl::StrCat("observation.images.", key.substr(0, key.size() - 6));
  }
  return absl::StrCat("observation.", key);
}

absl::StatusOr<std::vector<Target>> PlanTargets(const std::string& input, const DatasetLayout& layout,
                                                const nlohmann::json& env) {
  const auto imported = ImportedFeatures(env);
  std::vector<Target> targets;
  for (const FeatureSpec& spec : layout.spec) {
    if (absl::StartsWith(spec.name, "next_obs/")) {
      return Refuse(input, spec.name, "next_obs features have no LeRobot counterpart");
    }
    Target target{spec.name, "", spec, false, spec.name == "dones", nlohmann::json()};
    target.key = DefaultKey(spec.name, &target.video);
    if (auto it = imported.find(spec.name); it != imported.end()) {
      target.key = it->second.first;
      target.video = it->second.second.value("dtype", "") == "video";
      target.as_bool = it->second.second.value("dtype", "") == "bool";
      target.names = it->second.second.value("names", nlohmann::json());
    }
    const bool image_shape = spec.dtype == DType::kUint8 && spec.step_shape.size() == 3 && spec.step_shape[2] == 3;
    if (target.video && !image_shape) return Refuse(input, spec.name, "a camera feature that is not uint8 [H, W, 3]");
    if (target.video && (spec.step_shape[0] % 2 != 0 || spec.step_shape[1] % 2 != 0)) {
      return Refuse(input, spec.name, absl::StrCat("frames of ", spec.step_shape[1], "x", spec.step_shape[0],
                                                   " (width x height); yuv420p video needs an even width and height"));
    }
    if (!target.video && spec.step_shape.size() > 1) {
      return Refuse(input, spec.name, absl::StrCat("shape ", ShapeToString(spec.step_shape),
                                                   "; LeRobot tables hold numeric features of shape [n]"));
    }
    targets.push_back(target);
  }
  return targets;
}

nlohmann::json FeatureInfo(const Target& target, double fps, const std::string& encoder) {
  if (target.video) {
    const auto& shape = target.spec.step_shape;
    return {{"dtype", "video"},
            {"shape", shape},
            {"names", {"height", "width", "channels"}},
            {"info",
             {{"video.height", shape[0]}, {"video.width", shape[1]},
              {"video.codec", encoder == "libaom-av1" ? "av1" : "h264"}, {"video.pix_fmt", "yuv420p"},
              {"video.is_depth_map", false}, {"video.fps", fps}, {"video.channels", 3}, {"has_audio", false}}}};
  }
  const int64_t width = target.spec.step_shape.empty() ? 1 : target.spec.step_shape[0];
  return {{"dtype", target.as_bool ? "bool" : DTypeName(target.spec.dtype)}, {"shape", {width}}, {"names", target.names}};
}

// Concatenates the rows of `parts` (same dtype and step shape).
Array Concatenate(const std::vector<Array>& parts) {
  Array all = parts.front();
  all.shape[0] = 0;
  all.bytes.clear();
  for (const Array& part : parts) {
    all.bytes.insert(all.bytes.end(), part.bytes.begin(), part.bytes.end());
    all.shape[0] += part.Steps();
  }
  return all;
}

Array Column(int64_t rows, const std::function<int64_t(int64_t)>& value) {
  std::vector<int64_t> values(rows);
  for (int64_t i = 0; i < rows; ++i) values[i] = value(i);
  return Array::From<int64_t>({rows}, values);
}

absl::StatusOr<std::shared_ptr<arrow::Array>> BoolColumn(const Array& array) {
  arrow::BooleanBuilder builder;
  for (int64_t i = 0; i < array.NumElements(); ++i) {
    if (!builder.Append(array.ValueAsDouble(i) != 0).ok()) return absl::ResourceExhaustedError("bool column");
  }
  std::shared_ptr<arrow::Array> out;
  if (!builder.Finish(&out).ok()) return absl::ResourceExhaustedError("bool column");
  return out;
}

// The video files of one camera: the one being written and where each episode went.
struct CameraVideos {
  std::unique_ptr<lerobot::VideoWriter> writer;  // the open file
  std::string path;                              // its path
  int64_t file = -1;                             // its number (0, 1, ... over chunks)
  int64_t frames = 0;                            // frames written to it so far
  std::vector<int64_t> episode_file;             // per episode: its file number
  std::vector<int64_t> episode_from;             // per episode: its first frame in that file
};

// The table writer's bookkeeping of what was written so far.
struct Progress {
  std::map<std::string, std::vector<Array>> columns;  // numeric key -> per-demo rows
  std::vector<int64_t> lengths;
  std::vector<int64_t> row_bytes;                     // per demo: bytes of its numeric columns
  std::vector<std::vector<std::string>> episode_tasks;
  std::vector<int64_t> data_file;                     // per demo: the data file holding it
  std::map<std::string, CameraVideos> videos;         // camera key -> its files
};

// (chunk index, file index) of the `file`-th file of a kind.
std::pair<int64_t, int64_t> ChunkAndFile(int64_t file, int64_t files_per_chunk) {
  return {file / files_per_chunk, file % files_per_chunk};
}

// Refuses export options whose sizes are not positive, naming the option.
absl::Status CheckSizes(const LeRobotExportOptions& options) {
  if (!(options.data_file_mb > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("data_file_mb must be > 0, got ", options.data_file_mb));
  }
  if (!(options.video_file_mb > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("video_file_mb must be > 0, got ", options.video_file_mb));
  }
  if (options.files_per_chunk < 1) {
    return absl::InvalidArgumentError(absl::StrCat("files_per_chunk must be >= 1, got ", options.files_per_chunk));
  }
  return absl::OkStatus();
}

constexpr double kBytesPerMb = 1024.0 * 1024.0;

// Frames handed to the video encoder at a time, between checks for cancellation (AV1 takes tens of
// milliseconds a frame).
constexpr int64_t kFramesBetweenChecks = 4;

class Exporter {
 public:
  Exporter(const LeRobotExportOptions& options, const DatasetReader& reader, std::vector<Target> targets,
           nlohmann::json env, std::string root)
      : options_(options), reader_(reader), targets_(std::move(targets)), env_(std::move(env)), root_(std::move(root)) {}

  absl::Status Run(double fps) {
    fps_ = fps;
    tasks_ = env_.value("/lerobot/tasks"_json_pointer, std::vector<std::string>{});
    if (tasks_.empty()) tasks_.push_back(options_.task);
    const nlohmann::json episodes = env_.value("/lerobot/episodes"_json_pointer, nlohmann::json::array());
    for (size_t i = 0; i < reader_.layout().demos.size(); ++i) {
      const std::vector<std::string> tasks = i < episodes.size() ? episodes[i].value("tasks", std::vector<std::string>{})
                                                                 : std::vector<std::string>{tasks_.front()};
      ROBOLOOP_RETURN_IF_ERROR(CheckNotCancelled());
      ROBOLOOP_RETURN_IF_ERROR(AddDemo(reader_.layout().demos[i], tasks));
    }
    for (auto& [key, videos] : progress_.videos) ROBOLOOP_RETURN_IF_ERROR(videos.writer->Close());
    ROBOLOOP_RETURN_IF_ERROR(CheckNotCancelled());
    ROBOLOOP_RETURN_IF_ERROR(WriteDataFiles());
    ROBOLOOP_RETURN_IF_ERROR(WriteEpisodes());
    ROBOLOOP_RETURN_IF_ERROR(WriteTasks());
    ROBOLOOP_RETURN_IF_ERROR(WriteStats());
    return WriteInfo();
  }

  LeRobotExportResult result() const { return result_; }

 private:
  // Cancelled, naming the export, once options_.cancel is cancelled; else OK.
  absl::Status CheckNotCancelled() const {
    if (!common::IsCancelled(options_.cancel)) return absl::OkStatus();
    return absl::CancelledError(
        absl::StrCat("export of ", options_.input_path, " cancelled (", options_.cancel->Reason(), ")"));
  }

  bool Has(const std::string& key) const {
    return std::any_of(targets_.begin(), targets_.end(), [&](const Target& t) { return t.key == key; });
  }

  absl::Status AddDemo(const DemoLayout& demo, const std::vector<std::string>& tasks) {
    int64_t bytes = 0;
    for (const Target& target : targets_) {
      ROBOLOOP_ASSIGN_OR_RETURN(Array values, reader_.ReadFeature(demo.name, target.feature));
      if (target.video) {
        ROBOLOOP_RETURN_IF_ERROR(Encode(target, values));
      } else {
        bytes += static_cast<int64_t>(values.bytes.size());
        progress_.columns[target.key].push_back(std::move(values));
      }
    }
    progress_.row_bytes.push_back(bytes);
    progress_.lengths.push_back(demo.num_samples);
    progress_.episode_tasks.push_back(tasks);
    result_.total_frames += demo.num_samples;
    ++result_.num_episodes;
    return absl::OkStatus();
  }

  // True when the camera's open file has reached video_file_mb on disk.
  bool VideoFileFull(const CameraVideos& videos) const {
    std::error_code error;
    const uintmax_t size = std::filesystem::file_size(videos.path, error);
    return !error && static_cast<double>(size) >= options_.video_file_mb * kBytesPerMb;
  }

  // Closes the camera's open file (if any) and opens its next one.
  absl::Status OpenNextVideo(const Target& target, CameraVideos& videos) {
    if (videos.writer != nullptr) ROBOLOOP_RETURN_IF_ERROR(videos.writer->Close());
    ++videos.file;
    videos.frames = 0;
    const auto [chunk, file] = ChunkAndFile(videos.file, options_.files_per_chunk);
    lerobot::VideoWriterOptions video_options;
    video_options.path = JoinPath(root_, lerobot::FormatPath(lerobot::kVideoPathTemplate, chunk, file, target.key));
    video_options.encoder = options_.encoder;
    video_options.width = static_cast<int>(target.spec.step_shape[1]);
    video_options.height = static_cast<int>(target.spec.step_shape[0]);
    video_options.fps = static_cast<int>(std::lround(fps_));
    video_options.crf = options_.crf;
    ROBOLOOP_ASSIGN_OR_RETURN(videos.writer, lerobot::VideoWriter::Open(video_options));
    videos.path = video_options.path;
    return absl::OkStatus();
  }

  absl::Status Encode(const Target& target, const Array& frames) {
    CameraVideos& videos = progress_.videos[target.key];
    if (videos.writer == nullptr || VideoFileFull(videos)) ROBOLOOP_RETURN_IF_ERROR(OpenNextVideo(target, videos));
    videos.episode_file.push_back(videos.file);
    videos.episode_from.push_back(videos.frames);
    const int64_t frame_bytes = frames.Steps() == 0 ? 0 : static_cast<int64_t>(frames.bytes.size()) / frames.Steps();
    for (int64_t first = 0; first < frames.Steps(); first += kFramesBetweenChecks) {
      ROBOLOOP_RETURN_IF_ERROR(CheckNotCancelled());
      const int64_t count = std::min(kFramesBetweenChecks, frames.Steps() - first);
      ROBOLOOP_RETURN_IF_ERROR(videos.writer->Write(frames.bytes.data() + first * frame_bytes, count));
    }
    videos.frames += frames.Steps();
    result_.frames_encoded += frames.Steps();
    return absl::OkStatus();
  }

  // Writes the demos in data files of at most data_file_mb each (a demo is never split).
  absl::Status WriteDataFiles() {
    const int64_t demos = static_cast<int64_t>(progress_.lengths.size());
    if (demos == 0) return WriteDataFile(0, 0, 0, 0);
    int64_t first = 0, first_row = 0, file = 0;
    while (first < demos) {
      int64_t last = first, rows = 0;
      for (double bytes = 0; last < demos && (last == first || bytes < options_.data_file_mb * kBytesPerMb); ++last) {
        bytes += static_cast<double>(progress_.row_bytes[last]);
        rows += progress_.lengths[last];
        progress_.data_file.push_back(file);
      }
      ROBOLOOP_RETURN_IF_ERROR(WriteDataFile(first, last, first_row, file));
      first = last;
      first_row += rows;
      ++file;
    }
    return absl::OkStatus();
  }

  // Writes demos [first, last), whose rows start at global row `first_row`, as data file `file`.
  absl::Status WriteDataFile(int64_t first, int64_t last, int64_t first_row, int64_t file) {
    std::vector<int64_t> episode_of, frame_of;
    for (int64_t e = first; e < last; ++e) {
      for (int64_t f = 0; f < progress_.lengths[e]; ++f) {
        episode_of.push_back(e);
        frame_of.push_back(f);
      }
    }
    const int64_t rows = static_cast<int64_t>(episode_of.size());
    std::vector<std::shared_ptr<arrow::Field>> fields;
    std::vector<std::shared_ptr<arrow::Array>> columns;
    auto add = [&](const std::string& key, const Array& array, bool scalar, bool as_bool) -> absl::Status {
      std::shared_ptr<arrow::Array> column;
      if (as_bool) {
        ROBOLOOP_ASSIGN_OR_RETURN(column, BoolColumn(array));
      } else {
        ROBOLOOP_ASSIGN_OR_RETURN(column, lerobot::ColumnFromArray(array, scalar));
      }
      fields.push_back(arrow::field(key, column->type(), /*nullable=*/false));
      columns.push_back(column);
      return absl::OkStatus();
    };
    for (const Target& target : targets_) {
      if (target.video) continue;
      const bool scalar = target.spec.step_shape.empty() || target.spec.step_shape[0] == 1;
      const std::vector<Array>& per_demo = progress_.columns[target.key];
      ROBOLOOP_RETURN_IF_ERROR(add(target.key, Concatenate({per_demo.begin() + first, per_demo.begin() + last}), scalar,
                                   target.as_bool));
    }
    if (!Has("timestamp")) {
      std::vector<float> times(rows);
      for (int64_t i = 0; i < rows; ++i) times[i] = static_cast<float>(frame_of[i] / fps_);
      ROBOLOOP_RETURN_IF_ERROR(add("timestamp", Array::From<float>({rows}, times), true, false));
    }
    ROBOLOOP_RETURN_IF_ERROR(add("frame_index", Column(rows, [&](int64_t i) { return frame_of[i]; }), true, false));
    ROBOLOOP_RETURN_IF_ERROR(add("episode_index", Column(rows, [&](int64_t i) { return episode_of[i]; }), true, false));
    ROBOLOOP_RETURN_IF_ERROR(add("index", Column(rows, [&](int64_t i) { return first_row + i; }), true, false));
    if (!Has("task_index")) {
      ROBOLOOP_RETURN_IF_ERROR(add("task_index", Column(rows, [&](int64_t i) {
                                     return TaskIndex(progress_.episode_tasks[episode_of[i]]);
                                   }), true, false));
    }
    const auto [chunk_index, file_index] = ChunkAndFile(file, options_.files_per_chunk);
    return lerobot::WriteParquet(*arrow::Table::Make(arrow::schema(fields), columns),
                                 JoinPath(root_, lerobot::FormatPath(lerobot::kDataPathTemplate, chunk_index, file_index)));
  }

  int64_t TaskIndex(const std::vector<std::string>& tasks) {
    const std::string task = tasks.empty() ? options_.task : tasks.front();
    auto it = std::find(tasks_.begin(), tasks_.end(), task);
    if (it != tasks_.end()) return it - tasks_.begin();
    tasks_.push_back(task);
    return static_cast<int64_t>(tasks_.size()) - 1;
  }

  absl::Status WriteEpisodes() {
    const int64_t n = result_.num_episodes;
    arrow::ListBuilder tasks_builder(arrow::default_memory_pool(), std::make_shared<arrow::StringBuilder>());
    auto* strings = static_cast<arrow::StringBuilder*>(tasks_builder.value_builder());
    std::vector<int64_t> from(n), to(n);
    for (int64_t e = 0, row = 0; e < n; ++e) {
      from[e] = row;
      row += progress_.lengths[e];
      to[e] = row;
      if (!tasks_builder.Append().ok()) return absl::ResourceExhaustedError("tasks column");
      for (const std::string& task : progress_.episode_tasks[e]) {
        if (!strings->Append(task).ok()) return absl::ResourceExhaustedError("tasks column");
      }
    }
    std::shared_ptr<arrow::Array> tasks;
    if (!tasks_builder.Finish(&tasks).ok()) return absl::ResourceExhaustedError("tasks column");
    std::vector<std::shared_ptr<arrow::Field>> fields;
    std::vector<std::shared_ptr<arrow::Array>> columns;
    auto add_column = [&](const std::string& name, std::shared_ptr<arrow::Array> column) {
      fields.push_back(arrow::field(name, column->type()));
      columns.push_back(std::move(column));
    };
    auto add_ints = [&](const std::string& name, const std::function<int64_t(int64_t)>& value) -> absl::Status {
      ROBOLOOP_ASSIGN_OR_RETURN(auto column, lerobot::ColumnFromArray(Column(n, value), true));
      add_column(name, column);
      return absl::OkStatus();
    };
    auto add_times = [&](const std::string& name, const std::function<int64_t(int64_t)>& frame) -> absl::Status {
      std::vector<double> seconds;
      for (int64_t e = 0; e < n; ++e) seconds.push_back(frame(e) / fps_);
      ROBOLOOP_ASSIGN_OR_RETURN(auto column, lerobot::ColumnFromArray(Array::From<double>({n}, seconds), true));
      add_column(name, column);
      return absl::OkStatus();
    };
    auto zero = [](int64_t) -> int64_t { return 0; };
    const int64_t per_chunk = options_.files_per_chunk;
    ROBOLOOP_RETURN_IF_ERROR(add_ints("episode_index", [](int64_t e) { return e; }));
    add_column("tasks", tasks);
    ROBOLOOP_RETURN_IF_ERROR(add_ints("length", [&](int64_t e) { return progress_.lengths[e]; }));
    ROBOLOOP_RETURN_IF_ERROR(
        add_ints("data/chunk_index", [&](int64_t e) { return ChunkAndFile(progress_.data_file[e], per_chunk).first; }));
    ROBOLOOP_RETURN_IF_ERROR(
        add_ints("data/file_index", [&](int64_t e) { return ChunkAndFile(progress_.data_file[e], per_chunk).second; }));
    ROBOLOOP_RETURN_IF_ERROR(add_ints("dataset_from_index", [&](int64_t e) { return from[e]; }));
    ROBOLOOP_RETURN_IF_ERROR(add_ints("dataset_to_index", [&](int64_t e) { return to[e]; }));
    for (const auto& [key, videos] : progress_.videos) {
      const std::string prefix = absl::StrCat("videos/", key, "/");
      const CameraVideos& v = videos;
      ROBOLOOP_RETURN_IF_ERROR(
          add_ints(prefix + "chunk_index", [&](int64_t e) { return ChunkAndFile(v.episode_file[e], per_chunk).first; }));
      ROBOLOOP_RETURN_IF_ERROR(
          add_ints(prefix + "file_index", [&](int64_t e) { return ChunkAndFile(v.episode_file[e], per_chunk).second; }));
      ROBOLOOP_RETURN_IF_ERROR(add_times(prefix + "from_timestamp", [&](int64_t e) { return v.episode_from[e]; }));
      ROBOLOOP_RETURN_IF_ERROR(add_times(prefix + "to_timestamp", [&](int64_t e) {
        return v.episode_from[e] + progress_.lengths[e];
      }));
    }
    ROBOLOOP_RETURN_IF_ERROR(add_ints("meta/episodes/chunk_index", zero));
    ROBOLOOP_RETURN_IF_ERROR(add_ints("meta/episodes/file_index", zero));
    return lerobot::WriteParquet(*arrow::Table::Make(arrow::schema(fields), columns),
                                 JoinPath(root_, lerobot::FormatPath(
                                                     absl::StrCat(lerobot::kEpisodesDir, "/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"), 0, 0)));
  }

  // meta/tasks.parquet as pandas writes it: the task strings are the frame's index.
  absl::Status WriteTasks() {
    arrow::StringBuilder names;
    std::vector<int64_t> indices;
    for (size_t i = 0; i < tasks_.size(); ++i) {
      if (!names.Append(tasks_[i]).ok()) return absl::ResourceExhaustedError("tasks table");
      indices.push_back(static_cast<int64_t>(i));
    }
    std::shared_ptr<arrow::Array> name_column;
    if (!names.Finish(&name_column).ok()) return absl::ResourceExhaustedError("tasks table");
    ROBOLOOP_ASSIGN_OR_RETURN(auto index_column,
                              lerobot::ColumnFromArray(Array::From<int64_t>({static_cast<int64_t>(indices.size())}, indices), true));
    constexpr char kIndex[] = "__index_level_0__";
    const nlohmann::json pandas = {
        {"index_columns", {kIndex}},
        {"column_indexes",
         {{{"name", nullptr}, {"field_name", nullptr}, {"pandas_type", "unicode"}, {"numpy_type", "object"},
           {"metadata", {{"encoding", "UTF-8"}}}}}},
        {"columns",
         {{{"name", "task_index"}, {"field_name", "task_index"}, {"pandas_type", "int64"}, {"numpy_type", "int64"}, {"metadata", nullptr}},
          {{"name", nullptr}, {"field_name", kIndex}, {"pandas_type", "unicode"}, {"numpy_type", "object"}, {"metadata", nullptr}}}}};
    auto schema = arrow::schema({arrow::field("task_index", arrow::int64()), arrow::field(kIndex, arrow::utf8())},
                                arrow::key_value_metadata({"pandas"}, {pandas.dump()}));
    return lerobot::WriteParquet(*arrow::Table::Make(schema, {index_column, name_column}), JoinPath(root_, lerobot::kTasksPath));
  }

  // meta/stats.json from the file's exact statistics (data/stats.h), by LeRobot key.
  absl::Status WriteStats() {
    StatsOptions stats_options;
    stats_options.cancel = options_.cancel;
    ROBOLOOP_ASSIGN_OR_RETURN(DatasetStats computed, ComputeStats(reader_, stats_options));
    nlohmann::json stats = nlohmann::json::object();
    for (const FeatureStats& feature : computed) {
      const auto target = std::find_if(targets_.begin(), targets_.end(),
                                       [&](const Target& t) { return t.feature == feature.name; });
      if (target == targets_.end() || target->video) continue;
      stats[target->key] = {{"mean", feature.mean}, {"std", feature.std}, {"min", feature.min},
                            {"max", feature.max},   {"q01", feature.q01}, {"q99", feature.q99},
                            {"count", {feature.count}}};
    }
    return WriteFileAtomic(JoinPath(root_, "meta/stats.json"), stats.dump(4));
  }

  absl::Status WriteInfo() {
    nlohmann::json features = nlohmann::json::object();
    for (const Target& target : targets_) features[target.key] = FeatureInfo(target, fps_, options_.encoder);
    const nlohmann::json scalar_int = {{"dtype", "int64"}, {"shape", {1}}, {"names", nullptr}};
    if (!Has("timestamp")) features["timestamp"] = {{"dtype", "float32"}, {"shape", {1}}, {"names", nullptr}};
    for (const char* key : {"frame_index", "episode_index", "index"}) features[key] = scalar_int;
    if (!Has("task_index")) features["task_index"] = scalar_int;
    nlohmann::json info = {
        {"codebase_version", "v3.0"},
        {"robot_type", env_.value("/lerobot/robot_type"_json_pointer, nlohmann::json())},
        {"total_episodes", result_.num_episodes},
        {"total_frames", result_.total_frames},
        {"total_tasks", tasks_.size()},
        {"chunks_size", options_.files_per_chunk},
        {"data_files_size_in_mb", options_.data_file_mb},
        {"video_files_size_in_mb", options_.video_file_mb},
        {"fps", fps_},
        {"splits", {{"train", absl::StrCat("0:", result_.num_episodes)}}},
        {"data_path", lerobot::kDataPathTemplate},
        {"video_path", progress_.videos.empty() ? nlohmann::json() : nlohmann::json(lerobot::kVideoPathTemplate)},
        {"features", features}};
    nlohmann::json kept = env_;
    kept.erase("lerobot");  // what an import records of the LeRobot dataset itself; it records it again
    if (!kept.empty()) info[lerobot::kEnvArgsField] = kept;
    return WriteFileAtomic(JoinPath(root_, lerobot::kInfoPath), info.dump(4));
  }

  const LeRobotExportOptions& options_;
  const DatasetReader& reader_;
  std::vector<Target> targets_;
  nlohmann::json env_;
  std::string root_;
  double fps_ = 0;
  std::vector<std::string> tasks_;
  Progress progress_;
  LeRobotExportResult result_;
};

absl::StatusOr<double> FramesPerSecond(const LeRobotExportOptions& options, const std::string& env_args_json) {
  if (options.fps != 0) {
    if (std::isfinite(options.fps) && options.fps > 0) return options.fps;
    return absl::InvalidArgumentError(absl::StrCat("fps ", options.fps, ": expected a positive, finite number"));
  }
  return RecordedFramesPerSecond(options.input_path, env_args_json);
}

// The export creates the folders missing above `out`: FailedPrecondition "writing OUT: DIR is not a folder" when the
// nearest existing one above it is a file (where creating them would fail with a temporary's name).
absl::Status CheckCreatableOutput(const std::string& out) {
  std::filesystem::path above = std::filesystem::path(out).lexically_normal().parent_path();
  std::error_code error;
  while (!above.empty() && !std::filesystem::exists(above, error)) above = above.parent_path();
  if (above.empty() || std::filesystem::is_directory(above, error)) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat("writing ", out, ": ", above.string(), " is not a folder"));
}

// Refuses an existing output that the export must not replace: any without `overwrite`, and with it anything but an
// earlier LeRobot export, or a folder that holds the input or the working directory; and an output below a file.
absl::Status CheckReplaceableOutput(const LeRobotExportOptions& options) {
  const std::string& out = options.output_dir;
  if (!PathExists(out)) return CheckCreatableOutput(out);
  if (!options.overwrite) return absl::AlreadyExistsError(absl::StrCat(out, ": already exists (pass --overwrite)"));
  if (!PathExists(JoinPath(out, lerobot::kInfoPath))) {
    return absl::FailedPreconditionError(absl::StrCat(
        out, ": exists and is not a LeRobot dataset folder (no meta/info.json); --overwrite replaces only an earlier "
        "export"));
  }
  if (PathIsWithin(options.input_path, out)) {
    return absl::FailedPreconditionError(absl::StrCat(out, ": holds the input ", options.input_path,
                                                      "; --overwrite would delete it"));
  }
  std::error_code error;
  if (PathIsWithin(std::filesystem::current_path(error).string(), out)) {
    return absl::FailedPreconditionError(
        absl::StrCat(out, ": holds the working directory; --overwrite would delete it"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LeRobotExportResult> ExportLeRobot(const LeRobotExportOptions& options) {
  ROBOLOOP_RETURN_IF_ERROR(CheckReplaceableOutput(options));
  ROBOLOOP_RETURN_IF_ERROR(Annotate(CheckSizes(options), absl::StrCat("export of ", options.input_path)));
  DatasetReader::Options reader_options;
  reader_options.path = options.input_path;
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<DatasetReader> reader, DatasetReader::Open(reader_options));
  const nlohmann::json env = nlohmann::json::parse(reader->layout().env_args_json, nullptr, false);
  const nlohmann::json env_object = env.is_object() ? env : nlohmann::json::object();
  ROBOLOOP_ASSIGN_OR_RETURN(double fps, FramesPerSecond(options, reader->layout().env_args_json));
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<Target> targets, PlanTargets(options.input_path, reader->layout(), env_object));
  const std::string partial = PartialPathFor(options.output_dir);
  Exporter exporter(options, *reader, std::move(targets), env_object, partial);
  absl::Status status = exporter.Run(fps);
  if (status.ok()) status = ReplaceFolder(partial, options.output_dir);
  if (!status.ok()) {
    std::error_code ignored;
    std::filesystem::remove_all(partial, ignored);
    return status;
  }
  return exporter.result();
}

}  // namespace roboloop::data
