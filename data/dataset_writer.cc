#include "data/dataset_writer.h"

#include <fcntl.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/fs.h"
#include "common/status.h"
#include "data/hdf5_io.h"

namespace roboloop::data {
namespace {

bool IsRankOneFeature(const std::string& name) { return name == "rewards" || name == "dones"; }

absl::Status CheckEnvArgs(const std::string& text) {
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("env_args is not a JSON object: '", text.substr(0, 80), "'"));
  }
  return absl::OkStatus();
}

absl::Status CheckArrayShape(const std::string& name, const Array& array) {
  if (array.shape.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": rank 0, expected [T, ...]"));
  }
  for (int64_t dim : array.StepShape()) {
    if (dim <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": shape ", ShapeToString(array.shape), " has an empty dimension"));
    }
  }
  if (IsRankOneFeature(name) && array.shape.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": shape ", ShapeToString(array.shape), ", expected [T]"));
  }
  if (static_cast<int64_t>(array.bytes.size()) != array.NumElements() * DTypeSize(array.dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": ", array.bytes.size(),
                                                   " bytes for shape ",
                                                   ShapeToString(array.shape)));
  }
  return absl::OkStatus();
}

DatasetSpec SpecOf(const Episode& block) {
  DatasetSpec spec;
  for (const auto& [name, array] : block) spec.push_back({name, array.dtype, array.StepShape()});
  return spec;
}

}  // namespace

absl::Status CheckFeatureName(const std::string& name) {
  static const std::set<std::string> kTopLevel = {"actions", "rewards", "dones", "states"};
  if (kTopLevel.count(name) > 0) return absl::OkStatus();
  for (const std::string prefix : {"obs/", "next_obs/"}) {
    if (name.rfind(prefix, 0) == 0) {
      const std::string key = name.substr(prefix.size());
      if (!key.empty() && key.find('/') == std::string::npos) return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "feature '", name,
      "' is not part of the robomimic layout (actions, rewards, dones, states, obs/<key>, "
      "next_obs/<key>)"));
}

absl::Status CheckOutputFolder(const std::string& output) {
  const std::string folder = ParentDir(output);
  std::error_code error;
  const std::filesystem::file_status found = std::filesystem::status(folder, error);
  if (std::filesystem::is_directory(found)) return absl::OkStatus();
  if (std::filesystem::exists(found)) {
    return absl::FailedPreconditionError(absl::StrCat("writing ", output, ": ", folder, " is not a folder"));
  }
  return absl::NotFoundError(absl::StrCat("writing ", output, ": folder ", folder, " does not exist"));
}

DatasetWriter::DatasetWriter(const Options& options)
    : options_(options), partial_path_(PartialPathFor(options.path)) {}

DatasetWriter::~DatasetWriter() { Abandon(); }

absl::StatusOr<std::unique_ptr<DatasetWriter>> DatasetWriter::Create(const Options& options) {
  ROBOLOOP_RETURN_IF_ERROR(Annotate(CheckEnvArgs(options.env_args_json), options.path));
  ROBOLOOP_RETURN_IF_ERROR(CheckOutputFolder(options.path));
  std::error_code error;
  if (!options.overwrite && std::filesystem::exists(options.path, error)) {
    return absl::AlreadyExistsError(absl::StrCat(options.path, ": already exists"));
  }
  std::unique_ptr<DatasetWriter> writer(new DatasetWriter(options));
  absl::StatusOr<h5::Handle> file = h5::CreateFile(writer->partial_path_);
  if (!file.ok()) {
    std::remove(writer->partial_path_.c_str());  // HDF5 may have created it before failing
    return file.status();
  }
  writer->file_ = std::make_unique<h5::Handle>(*std::move(file));
  ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle data, h5::EnsureGroup(writer->file_->get(), kDataGroup));
  return writer;
}

absl::Status DatasetWriter::BeginEpisode() {
  if (file_ == nullptr) return absl::FailedPreconditionError("DatasetWriter is closed");
  if (episode_open_) {
    return absl::FailedPreconditionError(
        absl::StrCat(options_.path, ": ", DemoName(num_episodes_), " is still open"));
  }
  const std::string path = absl::StrCat(kDataGroup, "/", DemoName(num_episodes_));
  ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle group, h5::EnsureGroup(file_->get(), path));
  demo_group_ = std::make_unique<h5::Handle>(std::move(group));
  episode_open_ = true;
  episode_steps_ = 0;
  return absl::OkStatus();
}

absl::Status DatasetWriter::CheckBlock(const Episode& block, int64_t* rows) const {
  const std::string where = absl::StrCat(options_.path, ": ", DemoName(num_episodes_));
  if (block.count(kActions) == 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": block has no 'actions'"));
  }
  *rows = block.at(kActions).Steps();
  for (const auto& [name, array] : block) {
    ROBOLOOP_RETURN_IF_ERROR(Annotate(CheckFeatureName(name), where));
    ROBOLOOP_RETURN_IF_ERROR(Annotate(CheckArrayShape(name, array), where));
    if (IsImageKey(name)) {
      ROBOLOOP_RETURN_IF_ERROR(Annotate(CheckImageFeature({name, array.dtype, array.StepShape()}),
                                        absl::StrCat(where, "/", name)));
    }
    if (array.Steps() != *rows) {
      return absl::InvalidArgumentError(absl::StrCat(where, "/", name, ": length ",
                                                     array.Steps(), ", expected ", *rows,
                                                     " (actions)"));
    }
  }
  if (spec_.empty()) return absl::OkStatus();
  const DatasetSpec block_spec = SpecOf(block);
  for (const FeatureSpec& expected : spec_) {
    const FeatureSpec* found = FindFeature(block_spec, expected.name);
    if (found == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "/", expected.name, ": missing (the dataset spec has it)"));
    }
    if (*found != expected) {
      return absl::InvalidArgumentError(absl::StrCat(where, "/", expected.name, ": ",
                                                     DescribeFeature(*found), ", expected ",
                                                     DescribeFeature(expected)));
    }
  }
  if (block_spec.size() != spec_.size()) {
    for (const FeatureSpec& feature : block_spec) {
      if (FindFeature(spec_, feature.name) == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, "/", feature.name, ": not in the dataset spec (fixed by demo_0)"));
      }
    }
  }
  return absl::OkStatus();
}

StorageOptions DatasetWriter::StorageOf(const std::string& feature) const {
  return IsImageKey(feature) ? ImageStorage() : options_.storage;
}

absl::Status DatasetWriter::CreateEpisodeDatasets(const Episode& first_block, int64_t first_rows) {
  std::map<std::string, std::unique_ptr<h5::Handle>> datasets;
  for (const FeatureSpec& feature : spec_) {
    const std::string parent = feature.name.substr(0, feature.name.rfind('/') + 1);
    if (!parent.empty()) {
      ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle group,
                                h5::EnsureGroup(demo_group_->get(), parent));
    }
    ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle dataset,
                              h5::CreateExtensible(demo_group_->get(), feature.name,
                                                   feature.dtype, feature.step_shape,
                                                   first_rows, StorageOf(feature.name),
                                                   &first_block.at(feature.name)));
    datasets[feature.name] = std::make_unique<h5::Handle>(std::move(dataset));
  }
  open_datasets_ = std::move(datasets);
  return absl::OkStatus();
}

absl::Status DatasetWriter::Append(const Episode& block) {
  if (!episode_open_) {
    return absl::FailedPreconditionError(absl::StrCat(options_.path, ": Append without an open episode"));
  }
  int64_t rows = 0;
  ROBOLOOP_RETURN_IF_ERROR(CheckBlock(block, &rows));
  if (spec_.empty()) spec_ = SpecOf(block);
  // HDF5 errors name the feature; the file being written is added in front.
  if (open_datasets_.empty()) {
    ROBOLOOP_RETURN_IF_ERROR(Annotate(CreateEpisodeDatasets(block, rows), partial_path_));
  }
  for (const auto& [name, array] : block) {
    ROBOLOOP_RETURN_IF_ERROR(Annotate(h5::AppendRows(open_datasets_.at(name)->get(), array,
                                                     FeaturePath(DemoName(num_episodes_), name),
                                                     options_.frame_threads),
                                      partial_path_));
  }
  episode_steps_ += rows;
  return absl::OkStatus();
}

absl::StatusOr<std::string> DatasetWriter::EndEpisode() {
  const std::string demo = DemoName(num_episodes_);
  if (!episode_open_) {
    return absl::FailedPreconditionError(absl::StrCat(options_.path, ": no open episode"));
  }
  if (episode_steps_ == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(options_.path, ": ", demo, ": empty episode (no steps appended)"));
  }
  ROBOLOOP_RETURN_IF_ERROR(h5::WriteInt64Attr(demo_group_->get(), "num_samples", episode_steps_));
  open_datasets_.clear();
  demo_group_.reset();
  episode_open_ = false;
  total_steps_ += episode_steps_;
  ++num_episodes_;
  return demo;
}

absl::Status DatasetWriter::AbortEpisode() {
  if (!episode_open_) {
    return absl::FailedPreconditionError(absl::StrCat(options_.path, ": no open episode"));
  }
  open_datasets_.clear();
  demo_group_.reset();
  episode_open_ = false;
  return h5::DeleteIfExists(file_->get(),
                            absl::StrCat(kDataGroup, "/", DemoName(num_episodes_)));
}

absl::StatusOr<std::string> DatasetWriter::WriteEpisode(const Episode& episode) {
  ROBOLOOP_RETURN_IF_ERROR(BeginEpisode());
  absl::Status appended = Append(episode);
  if (!appended.ok()) {
    AbortEpisode().IgnoreError();
    return appended;
  }
  return EndEpisode();
}

absl::Status DatasetWriter::SetMask(const std::string& split,
                                    const std::vector<std::string>& demos) {
  if (split.empty() || split.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("mask name '", split, "' is not a plain name"));
  }
  masks_[split] = demos;
  return absl::OkStatus();
}

absl::Status DatasetWriter::WriteMasks() {
  if (masks_.empty()) return absl::OkStatus();
  ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle group, h5::EnsureGroup(file_->get(), kMaskGroup));
  for (const auto& [split, demos] : masks_) {
    for (const std::string& demo : demos) {
      const std::optional<int64_t> index = ParseDemoIndex(demo);
      if (!index.has_value() || *index >= num_episodes_) {
        return absl::InvalidArgumentError(absl::StrCat(options_.path, ": mask/", split,
                                                       ": unknown demo ", demo));
      }
    }
    ROBOLOOP_RETURN_IF_ERROR(h5::WriteStringArray(group.get(), split, demos));
  }
  return absl::OkStatus();
}

absl::Status DatasetWriter::Close() {
  if (file_ == nullptr) return absl::FailedPreconditionError("DatasetWriter is closed");
  if (episode_open_) {
    return absl::FailedPreconditionError(
        absl::StrCat(options_.path, ": ", DemoName(num_episodes_), " is still open"));
  }
  if (num_episodes_ == 0) {
    return absl::FailedPreconditionError(absl::StrCat(options_.path, ": no episodes written"));
  }
  {
    ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle data, h5::EnsureGroup(file_->get(), kDataGroup));
    ROBOLOOP_RETURN_IF_ERROR(h5::WriteInt64Attr(data.get(), "total", total_steps_));
    ROBOLOOP_RETURN_IF_ERROR(h5::WriteStringAttr(data.get(), "env_args", options_.env_args_json));
  }
  ROBOLOOP_RETURN_IF_ERROR(WriteMasks());
  ROBOLOOP_RETURN_IF_ERROR(h5::WriteStringAttr(file_->get(), kLineageAttr,
                                               LineageToJson(options_.lineage).dump()));
  return Publish();
}

absl::Status DatasetWriter::Publish() {
  // Flush (HDF5 writes what it still caches), close, fsync, then rename: a full disk or a
  // crash never leaves a half-written file under the final name. A failed flush keeps the
  // file open for Abandon(), which can still close it; any later failure removes the file.
  if (H5Fflush(file_->get(), H5F_SCOPE_GLOBAL) < 0) {
    return h5::ErrorFromStack(partial_path_, "cannot flush");
  }
  absl::Status status = h5::CloseFile(std::move(*file_), partial_path_);
  file_.reset();
  if (status.ok() && options_.before_publish) status = options_.before_publish(partial_path_);
  if (status.ok()) {
    UniqueFd fd(::open(partial_path_.c_str(), O_RDONLY | O_CLOEXEC));
    status = fd.valid() ? FsyncFd(fd.get(), partial_path_)
                        : ErrnoStatus(errno, absl::StrCat("cannot open ", partial_path_));
  }
  if (status.ok()) status = RenameDurable(partial_path_, options_.path);
  if (!status.ok()) std::remove(partial_path_.c_str());
  return status;
}

void DatasetWriter::Abandon() {
  if (file_ == nullptr) return;
  open_datasets_.clear();
  demo_group_.reset();
  file_.reset();
  std::remove(partial_path_.c_str());
}

}  // namespace roboloop::data
