#include "data/aloha_import.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "data/dataset_writer.h"
#include "common/sha256.h"
#include "data/hdf5_io.h"
#include "data/layout_scan.h"

namespace roboloop::data {
namespace {

// One source dataset of an episode and the feature it becomes.
struct SourceFeature {
  std::string source_path;  // e.g. "/observations/qpos"
  h5::Handle dataset;
  h5::DatasetShape shape;
};

absl::StatusOr<std::vector<std::pair<int64_t, std::string>>> ListEpisodes(const std::string& dir) {
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) {
    return absl::NotFoundError(absl::StrCat(dir, ": not a directory"));
  }
  std::vector<std::pair<int64_t, std::string>> episodes;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    constexpr char kSuffix[] = ".hdf5";
    if (name.size() <= sizeof(kSuffix) || name.substr(name.size() - 5) != kSuffix) continue;
    const std::string stem = name.substr(0, name.size() - 5);
    const std::optional<int64_t> index =
        stem.rfind("episode_", 0) == 0 ? ParseDemoIndex("demo_" + stem.substr(8)) : std::nullopt;
    if (index.has_value()) episodes.emplace_back(*index, entry.path().string());
  }
  if (error) return ErrnoStatus(error.value(), dir);
  if (episodes.empty()) return absl::NotFoundError(absl::StrCat(dir, ": no episode_<i>.hdf5 files"));
  std::sort(episodes.begin(), episodes.end());
  return episodes;
}

absl::Status AddSource(hid_t file, const std::string& source_path, const std::string& feature,
                       std::map<std::string, SourceFeature>* sources) {
  ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle dataset, h5::OpenDataset(file, source_path, source_path));
  ROBOLOOP_ASSIGN_OR_RETURN(h5::DatasetShape shape, h5::Describe(dataset.get(), source_path));
  if (shape.dims.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(source_path, ": rank 0, expected [T, ...]"));
  }
  (*sources)[feature] = SourceFeature{source_path, std::move(dataset), std::move(shape)};
  return absl::OkStatus();
}

absl::Status AddCameras(hid_t file, std::map<std::string, SourceFeature>* sources) {
  constexpr char kImages[] = "/observations/images";
  if (h5::KindOf(file, kImages) == h5::ObjectKind::kMissing) return absl::OkStatus();
  ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle group, h5::OpenGroup(file, kImages, kImages));
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::string> cameras,
                            h5::ListChildren(group.get(), kImages));
  for (const std::string& camera : cameras) {
    const std::string path = absl::StrCat(kImages, "/", camera);
    const std::string feature = absl::StrCat("obs/", camera, "_image");
    ROBOLOOP_RETURN_IF_ERROR(AddSource(file, path, feature, sources));
    const h5::DatasetShape& shape = sources->at(feature).shape;
    const FeatureSpec spec{feature, shape.dtype, std::vector<int64_t>(shape.dims.begin() + 1, shape.dims.end())};
    ROBOLOOP_RETURN_IF_ERROR(Annotate(CheckImageFeature(spec), path));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, SourceFeature>> OpenSources(hid_t file) {
  std::map<std::string, SourceFeature> sources;
  ROBOLOOP_RETURN_IF_ERROR(AddSource(file, "/action", kActions, &sources));
  ROBOLOOP_RETURN_IF_ERROR(AddSource(file, "/observations/qpos", "obs/qpos", &sources));
  ROBOLOOP_RETURN_IF_ERROR(AddSource(file, "/observations/qvel", "obs/qvel", &sources));
  ROBOLOOP_RETURN_IF_ERROR(AddCameras(file, &sources));
  const int64_t steps = sources.at(kActions).shape.dims[0];
  for (const auto& [feature, source] : sources) {
    if (source.shape.dims[0] != steps) {
      return absl::InvalidArgumentError(absl::StrCat(source.source_path, ": length ",
                                                     source.shape.dims[0], ", expected ", steps,
                                                     " (/action)"));
    }
  }
  if (steps == 0) return absl::InvalidArgumentError("/action: empty episode (0 steps)");
  return sources;
}

absl::StatusOr<Episode> ReadBlock(const std::map<std::string, SourceFeature>& sources,
                                  int64_t first, int64_t rows) {
  Episode block;
  for (const auto& [feature, source] : sources) {
    std::vector<int64_t> shape = source.shape.dims;
    shape[0] = rows;
    Array array = Array::Zeros(source.shape.dtype, shape);
    ROBOLOOP_RETURN_IF_ERROR(h5::ReadRows(source.dataset.get(), source.shape.dtype, first, rows,
                                          array.bytes.data(), source.source_path));
    // Non-finite values are refused here as by merge and training: an import never writes them.
    if (IsFloating(array.dtype)) {
      const std::optional<ValidationIssue> issue = internal::FindNonFinite(
          array.dtype, array.bytes.data(), array.NumElements(), array.ElementsPerStep(), source.source_path, first);
      if (issue.has_value()) return absl::InvalidArgumentError(issue->ToString());
    }
    block[feature] = std::move(array);
  }
  return block;
}

int64_t BlockRows(const std::map<std::string, SourceFeature>& sources, int64_t max_bytes) {
  int64_t row_bytes = 0;
  for (const auto& [feature, source] : sources) {
    int64_t bytes = DTypeSize(source.shape.dtype);
    for (size_t i = 1; i < source.shape.dims.size(); ++i) bytes *= source.shape.dims[i];
    row_bytes += bytes;
  }
  return std::max<int64_t>(1, max_bytes / std::max<int64_t>(row_bytes, 1));
}

// Copies the episode of the open `file` as one demo; errors name paths inside the file.
absl::StatusOr<int64_t> CopyEpisode(hid_t file, int64_t max_block_bytes, DatasetWriter* writer) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto sources, OpenSources(file));
  const int64_t steps = sources.at(kActions).shape.dims[0];
  const int64_t block_rows = BlockRows(sources, max_block_bytes);
  ROBOLOOP_RETURN_IF_ERROR(writer->BeginEpisode());
  for (int64_t first = 0; first < steps; first += block_rows) {
    ROBOLOOP_ASSIGN_OR_RETURN(Episode block,
                              ReadBlock(sources, first, std::min(block_rows, steps - first)));
    ROBOLOOP_RETURN_IF_ERROR(writer->Append(block));
  }
  ROBOLOOP_RETURN_IF_ERROR(writer->EndEpisode().status());
  return steps;
}

}  // namespace

absl::StatusOr<AlohaImportResult> ImportAloha(const AlohaImportOptions& options) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto episodes, ListEpisodes(options.input_dir));
  AlohaImportResult result;
  result.lineage.operation = "import_aloha";
  for (const auto& [index, path] : episodes) {
    ROBOLOOP_ASSIGN_OR_RETURN(std::string sha256, Sha256File(path));
    result.lineage.parents.push_back({"aloha_episode", path, sha256});
  }
  DatasetWriter::Options writer_options;
  writer_options.path = options.output_path;
  writer_options.env_args_json = options.env_args_json;
  writer_options.lineage = result.lineage;
  writer_options.storage = options.storage;
  writer_options.overwrite = options.overwrite;
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<DatasetWriter> writer,
                            DatasetWriter::Create(writer_options));
  for (const auto& [index, path] : episodes) {
    ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle file, h5::OpenFile(path, /*writable=*/false));  // its errors name `path`
    absl::StatusOr<int64_t> steps = CopyEpisode(file.get(), options.max_block_bytes, writer.get());
    if (!steps.ok()) return Annotate(steps.status(), path);
    result.total_steps += *steps;
    ++result.num_episodes;
  }
  ROBOLOOP_RETURN_IF_ERROR(writer->Close());
  return result;
}

}  // namespace roboloop::data
