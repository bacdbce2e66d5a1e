#include "data/stats.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "data/hdf5_io.h"

namespace roboloop::data {
namespace {

// The `description` attribute of an image key's stats group, for readers of the file.
constexpr char kPerChannelDescription[] =
    "per RGB channel over every pixel of every frame, pixel values scaled to [0, 1] (value / 255)";

std::vector<double>* StatField(FeatureStats* stats, int index) {
  std::vector<double>* fields[] = {&stats->mean, &stats->std, &stats->min,
                                   &stats->max,  &stats->q01, &stats->q99};
  return fields[index];
}

const std::vector<double>& StatField(const FeatureStats& stats, int index) {
  return *StatField(const_cast<FeatureStats*>(&stats), index);
}

int64_t ElementsPerStep(const FeatureSpec& feature) {
  int64_t count = 1;
  for (int64_t dim : feature.step_shape) count *= dim;
  return count;
}

// Reads one feature of every demo as doubles, one column (vector) per element of a step.
absl::StatusOr<std::vector<std::vector<double>>> GatherColumns(const DatasetReader& reader,
                                                               const FeatureSpec& feature) {
  const int64_t width = ElementsPerStep(feature);
  std::vector<std::vector<double>> columns(width);
  for (auto& column : columns) column.reserve(reader.layout().total_steps);
  std::vector<double> row_values;
  for (const DemoLayout& demo : reader.layout().demos) {
    ROBOLOOP_ASSIGN_OR_RETURN(Array array, reader.ReadFeature(demo.name, feature.name));
    row_values.resize(array.NumElements());
    ConvertToDouble(array.dtype, array.bytes.data(), array.NumElements(), row_values.data());
    for (int64_t step = 0; step < demo.num_samples; ++step) {
      for (int64_t element = 0; element < width; ++element) {
        columns[element].push_back(row_values[step * width + element]);
      }
    }
  }
  return columns;
}

void AddColumnStats(std::vector<double> column, FeatureStats* stats) {
  double sum = 0;
  for (double value : column) sum += value;
  const double mean = sum / column.size();
  double squares = 0;
  for (double value : column) squares += (value - mean) * (value - mean);
  std::sort(column.begin(), column.end());
  stats->mean.push_back(mean);
  stats->std.push_back(std::sqrt(squares / column.size()));
  stats->min.push_back(column.front());
  stats->max.push_back(column.back());
  stats->q01.push_back(Quantile(column, 0.01));
  stats->q99.push_back(Quantile(column, 0.99));
}

// Pixel values counted per channel (R, G, B) of an image key.
using ChannelHistograms = std::array<std::array<int64_t, 256>, 3>;

// Counts the pixels of every frame of image key `feature`, reading at most 16 MiB at a time.
absl::StatusOr<ChannelHistograms> CountPixels(const DatasetReader& reader, const FeatureSpec& feature) {
  constexpr int64_t kBlockBytes = int64_t{16} << 20;
  const int64_t frame_bytes = ElementsPerStep(feature);
  const int64_t block_frames = std::max<int64_t>(1, kBlockBytes / frame_bytes);
  ChannelHistograms histograms{};
  std::vector<uint8_t> block;
  for (const DemoLayout& demo : reader.layout().demos) {
    for (int64_t first = 0; first < demo.num_samples; first += block_frames) {
      const int64_t frames = std::min(block_frames, demo.num_samples - first);
      block.resize(frames * frame_bytes);
      ROBOLOOP_RETURN_IF_ERROR(reader.ReadFeatureRows(demo.name, feature.name, first, frames, block.data()));
      for (size_t i = 0; i < block.size(); i += 3) {
        ++histograms[0][block[i]];
        ++histograms[1][block[i + 1]];
        ++histograms[2][block[i + 2]];
      }
    }
  }
  return histograms;
}

// Appends one channel's statistics, pixel values scaled to [0, 1].
void AddChannelStats(const std::array<int64_t, 256>& histogram, FeatureStats* stats) {
  constexpr double kScale = 1.0 / 255;
  int64_t total = 0;
  double sum = 0;
  for (int value = 0; value < 256; ++value) {
    total += histogram[value];
    sum += static_cast<double>(value) * histogram[value];
  }
  const double mean = sum / total;
  double squares = 0;
  int lowest = 255;
  int highest = 0;
  for (int value = 0; value < 256; ++value) {
    if (histogram[value] == 0) continue;
    squares += (value - mean) * (value - mean) * histogram[value];
    lowest = std::min(lowest, value);
    highest = std::max(highest, value);
  }
  stats->mean.push_back(mean * kScale);
  stats->std.push_back(std::sqrt(squares / total) * kScale);
  stats->min.push_back(lowest * kScale);
  stats->max.push_back(highest * kScale);
  stats->q01.push_back(HistogramQuantile(histogram, 0.01) * kScale);
  stats->q99.push_back(HistogramQuantile(histogram, 0.99) * kScale);
}

// Per-channel statistics of image key `feature` over every frame of the file.
absl::StatusOr<FeatureStats> ComputeImageStats(const DatasetReader& reader, const FeatureSpec& feature) {
  ROBOLOOP_ASSIGN_OR_RETURN(ChannelHistograms histograms, CountPixels(reader, feature));
  FeatureStats stats;
  stats.name = feature.name;
  stats.count = reader.layout().total_steps;
  stats.per_channel = true;
  for (const std::array<int64_t, 256>& histogram : histograms) AddChannelStats(histogram, &stats);
  return stats;
}

absl::StatusOr<FeatureStats> ComputeFeatureStats(const DatasetReader& reader,
                                                 const FeatureSpec& feature,
                                                 const StatsOptions& options) {
  const int64_t needed = 8 * reader.layout().total_steps * ElementsPerStep(feature);
  if (needed > options.memory_limit_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        reader.path(), ": statistics of ", feature.name, " need ", needed,
        " bytes, over the limit of ", options.memory_limit_bytes,
        " (StatsOptions::memory_limit_bytes)"));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::vector<double>> columns,
                            GatherColumns(reader, feature));
  FeatureStats stats;
  stats.name = feature.name;
  stats.count = reader.layout().total_steps;
  for (std::vector<double>& column : columns) AddColumnStats(std::move(column), &stats);
  return stats;
}

absl::Status WriteFeatureStats(hid_t file, const FeatureStats& stats) {
  const std::string group_path = absl::StrCat(kStatsGroup, "/", stats.name);
  ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle group, h5::EnsureGroup(file, group_path));
  StorageOptions storage;
  storage.gzip_level = 0;
  for (int i = 0; i < 6; ++i) {
    const std::vector<double>& values = StatField(stats, i);
    const Array array = Array::From<double>({static_cast<int64_t>(values.size())}, values);
    ROBOLOOP_RETURN_IF_ERROR(h5::WriteArray(group.get(), kStatFieldNames[i], array, storage));
  }
  if (stats.per_channel) {
    ROBOLOOP_RETURN_IF_ERROR(h5::WriteStringAttr(group.get(), "description", kPerChannelDescription));
  }
  return h5::WriteInt64Attr(group.get(), "count", stats.count);
}

absl::StatusOr<FeatureStats> ReadFeatureStats(hid_t file, const std::string& name,
                                              const std::string& path) {
  const std::string group_path = absl::StrCat(kStatsGroup, "/", name);
  ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle group, h5::OpenGroup(file, group_path, group_path));
  FeatureStats stats;
  stats.name = name;
  stats.per_channel = IsImageKey(name);
  for (int i = 0; i < 6; ++i) {
    const std::string display = absl::StrCat(path, ": ", group_path, "/", kStatFieldNames[i]);
    ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle dataset,
                              h5::OpenDataset(group.get(), kStatFieldNames[i], display));
    ROBOLOOP_ASSIGN_OR_RETURN(Array array, h5::ReadArray(dataset.get(), display));
    std::vector<double>* field = StatField(&stats, i);
    field->resize(array.NumElements());
    ConvertToDouble(array.dtype, array.bytes.data(), array.NumElements(), field->data());
  }
  ROBOLOOP_ASSIGN_OR_RETURN(std::optional<int64_t> count,
                            h5::ReadInt64Attr(group.get(), "count", group_path));
  stats.count = count.value_or(0);
  return stats;
}

}  // namespace

double Quantile(const std::vector<double>& sorted, double q) {
  const double position = q * (sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(position));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = position - below;
  return sorted[below] + fraction * (sorted[above] - sorted[below]);
}

double HistogramQuantile(const std::array<int64_t, 256>& histogram, double q) {
  int64_t total = 0;
  for (int64_t count : histogram) total += count;
  const double position = q * (total - 1);
  const int64_t below = static_cast<int64_t>(std::floor(position));
  const int64_t above = std::min(below + 1, total - 1);
  // The value at `rank` (0-based) of the values in ascending order.
  auto value_at = [&histogram](int64_t rank) {
    int64_t seen = 0;
    for (int value = 0; value < 255; ++value) {
      seen += histogram[value];
      if (rank < seen) return value;
    }
    return 255;
  };
  const double low = value_at(below);
  return low + (position - below) * (value_at(above) - low);
}

absl::StatusOr<DatasetStats> ComputeStats(const DatasetReader& reader,
                                          const StatsOptions& options) {
  DatasetStats stats;
  for (const FeatureSpec& feature : reader.layout().spec) {
    const bool image = IsImageKey(feature.name);
    if (!image && feature.step_shape.size() > 1) continue;
    if (common::IsCancelled(options.cancel)) {
      return absl::CancelledError(
          absl::StrCat("statistics of ", reader.path(), " cancelled (", options.cancel->Reason(), ")"));
    }
    ROBOLOOP_ASSIGN_OR_RETURN(FeatureStats feature_stats, image ? ComputeImageStats(reader, feature)
                                                                : ComputeFeatureStats(reader, feature, options));
    stats.push_back(std::move(feature_stats));
  }
  return stats;
}

absl::Status StoreStats(const std::string& path, const DatasetStats& stats) {
  ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle file, h5::OpenFile(path, /*writable=*/true));
  ROBOLOOP_RETURN_IF_ERROR(Annotate(h5::DeleteIfExists(file.get(), kStatsGroup), path));
  for (const FeatureStats& feature_stats : stats) {
    ROBOLOOP_RETURN_IF_ERROR(Annotate(WriteFeatureStats(file.get(), feature_stats), path));
  }
  if (H5Fflush(file.get(), H5F_SCOPE_GLOBAL) < 0) return h5::ErrorFromStack(path, "cannot flush");
  return absl::OkStatus();
}

absl::StatusOr<DatasetStats> ComputeFileStats(const std::string& path, const StatsOptions& options) {
  DatasetReader::Options reader_options;
  reader_options.path = path;
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<DatasetReader> reader, DatasetReader::Open(reader_options));
  return ComputeStats(*reader, options);
}

absl::StatusOr<DatasetStats> ComputeAndStoreStats(const std::string& path,
                                                  const StatsOptions& options) {
  ROBOLOOP_ASSIGN_OR_RETURN(DatasetStats stats, ComputeFileStats(path, options));
  ROBOLOOP_RETURN_IF_ERROR(StoreStats(path, stats));
  return stats;
}

absl::StatusOr<std::optional<DatasetStats>> LoadStats(const std::string& path) {
  DatasetReader::Options reader_options;
  reader_options.path = path;
  reader_options.validation.scan_values = false;
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<DatasetReader> reader,
                            DatasetReader::Open(reader_options));
  if (!reader->layout().has_stats) return std::optional<DatasetStats>();
  ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle file, h5::OpenFile(path, /*writable=*/false));
  DatasetStats stats;
  for (const FeatureSpec& feature : reader->layout().spec) {
    const std::string group_path = absl::StrCat(kStatsGroup, "/", feature.name);
    if (h5::KindOf(file.get(), group_path) == h5::ObjectKind::kMissing) continue;
    ROBOLOOP_ASSIGN_OR_RETURN(FeatureStats feature_stats,
                              ReadFeatureStats(file.get(), feature.name, path));
    stats.push_back(std::move(feature_stats));
  }
  return std::optional<DatasetStats>(std::move(stats));
}

nlohmann::json StatsToJson(const DatasetStats& stats) {
  nlohmann::json json = nlohmann::json::object();
  for (const FeatureStats& feature : stats) {
    nlohmann::json entry = {{"count", feature.count}};
    if (feature.per_channel) entry["per_channel"] = true;
    for (int i = 0; i < 6; ++i) entry[kStatFieldNames[i]] = StatField(feature, i);
    json[feature.name] = std::move(entry);
  }
  return json;
}

}  // namespace roboloop::data
