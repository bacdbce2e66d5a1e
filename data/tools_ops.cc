#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/fs.h"
#include "common/status.h"
#include "data/dataset_reader.h"
#include "data/dataset_writer.h"
#include "common/sha256.h"
#include "data/hdf5_io.h"
#include "data/seed_ranges.h"
#include "data/tools.h"

namespace roboloop::data {
namespace {

absl::StatusOr<std::unique_ptr<DatasetReader>> OpenStrict(const std::string& path) {
  DatasetReader::Options options;
  options.path = path;
  return DatasetReader::Open(options);
}

std::set<std::string> SplitNames(const DatasetLayout& layout) {
  std::set<std::string> names;
  for (const auto& [name, demos] : layout.masks) names.insert(name);
  return names;
}

bool SameSplitNames(const std::vector<std::unique_ptr<DatasetReader>>& readers) {
  for (const auto& reader : readers) {
    if (SplitNames(reader->layout()) != SplitNames(readers.front()->layout())) return false;
  }
  return true;
}

// `status` naming `file` first, unless it is OK or already names it.
absl::Status NamingFile(const absl::Status& status, const std::string& file) {
  if (status.ok() || absl::StartsWith(status.message(), file)) return status;
  return Annotate(status, file);
}

// `status` of writing the merged file `output`: errors about the temporary file the writer writes
// (`output`.partial-<uuid>) are prefixed with the output the user asked for; those that name
// `output` itself (it already exists, its folder does not) stay as they are.
absl::Status WritingOutput(const absl::Status& status, const std::string& output) {
  if (status.ok() || absl::StartsWith(status.message(), absl::StrCat(output, ": ")) ||
      absl::StartsWith(status.message(), absl::StrCat("writing ", output, ": "))) {
    return status;
  }
  return Annotate(status, absl::StrCat("writing ", output));
}

// Copies every demo of `reader` to `writer`, which writes `output`, and returns old name -> new name;
// Cancelled once `cancel` (may be null) is. A failed read names the input, a failed write `output`.
absl::StatusOr<std::map<std::string, std::string>> CopyDemos(const DatasetReader& reader, DatasetWriter* writer,
                                                             const std::string& output,
                                                             const common::CancellationToken* cancel) {
  std::map<std::string, std::string> renamed;
  for (const DemoLayout& demo : reader.layout().demos) {
    if (common::IsCancelled(cancel)) {
      return absl::CancelledError(absl::StrCat("merge cancelled (", cancel->Reason(), ")"));
    }
    absl::StatusOr<Episode> episode = reader.ReadEpisode(demo.name);
    if (!episode.ok()) return NamingFile(episode.status(), reader.path());
    absl::StatusOr<std::string> written = writer->WriteEpisode(*episode);
    if (!written.ok()) return WritingOutput(written.status(), output);
    renamed[demo.name] = *std::move(written);
  }
  return renamed;
}

absl::Status WriteMergedDemos(const std::vector<std::unique_ptr<DatasetReader>>& readers, DatasetWriter* writer,
                              const std::string& output, const common::CancellationToken* cancel) {
  const bool carry_masks = SameSplitNames(readers);
  std::map<std::string, std::vector<std::string>> masks;
  for (const auto& reader : readers) {
    ROBOLOOP_ASSIGN_OR_RETURN(auto renamed, CopyDemos(*reader, writer, output, cancel));
    if (!carry_masks) continue;
    for (const auto& [split, demos] : reader->layout().masks) {
      for (const std::string& demo : demos) masks[split].push_back(renamed.at(demo));
    }
  }
  for (const auto& [split, demos] : masks) {
    ROBOLOOP_RETURN_IF_ERROR(WritingOutput(writer->SetMask(split, demos), output));
  }
  return absl::OkStatus();
}

absl::Status WriteSplitMasks(const std::string& path, const SplitAssignment& assignment) {
  ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle file, h5::OpenFile(path, /*writable=*/true));
  absl::StatusOr<h5::Handle> group = h5::EnsureGroup(file.get(), kMaskGroup);
  if (!group.ok()) return Annotate(group.status(), path);
  for (const auto& [split, demos] :
       {std::make_pair("train", &assignment.train), std::make_pair("valid", &assignment.valid)}) {
    ROBOLOOP_RETURN_IF_ERROR(Annotate(h5::DeleteIfExists(group->get(), split), path));
    ROBOLOOP_RETURN_IF_ERROR(Annotate(h5::WriteStringArray(group->get(), split, *demos), path));
  }
  if (H5Fflush(file.get(), H5F_SCOPE_GLOBAL) < 0) return h5::ErrorFromStack(path, "cannot flush");
  return absl::OkStatus();
}

// The task a file's env_args name (its env_name), or "" when they name none.
std::string TaskOf(const DatasetLayout& layout) {
  const nlohmann::json env_args = nlohmann::json::parse(layout.env_args_json, nullptr, false);
  if (!env_args.is_object() || !env_args.contains("env_name") || !env_args["env_name"].is_string()) return "";
  return env_args["env_name"].get<std::string>();
}

std::string DescribeTask(const std::string& task) {
  return task.empty() ? "no task (env_args without env_name)" : "task '" + task + "'";
}

// Demos of different tasks would all be labelled with the first file's task: refused.
absl::Status CheckSameTask(const DatasetReader& first, const DatasetReader& other) {
  const std::string expected = TaskOf(first.layout());
  const std::string found = TaskOf(other.layout());
  if (found == expected) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(other.path(), ": ", DescribeTask(found), ", but ", first.path(),
                                                 " has ", DescribeTask(expected),
                                                 " (merge only datasets of one task)"));
}

}  // namespace

absl::StatusOr<DatasetLayout> MergeDatasets(const MergeOptions& options) {
  if (options.inputs.empty()) return absl::InvalidArgumentError("merge: no input files");
  std::vector<std::unique_ptr<DatasetReader>> readers;
  DatasetWriter::Options writer_options;
  writer_options.lineage.operation = "merge";
  for (const std::string& input : options.inputs) {
    ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<DatasetReader> reader, OpenStrict(input));
    readers.push_back(std::move(reader));
    ROBOLOOP_RETURN_IF_ERROR(CheckSameFeatures(readers.front()->path(), readers.front()->layout().spec,
                                               readers.back()->path(), readers.back()->layout().spec));
    ROBOLOOP_RETURN_IF_ERROR(CheckSameTask(*readers.front(), *readers.back()));
    ROBOLOOP_ASSIGN_OR_RETURN(std::string sha256, Sha256File(input));
    writer_options.lineage.parents.push_back({"dataset", input, sha256});
  }
  // The writer writes under a temporary name and renames the file into place whole, statistics
  // included (before_publish).
  writer_options.path = options.output;
  writer_options.overwrite = options.overwrite;
  std::vector<std::string> env_args;
  for (const auto& reader : readers) env_args.push_back(reader->layout().env_args_json);
  ROBOLOOP_ASSIGN_OR_RETURN(writer_options.env_args_json, MergedEnvArgs(env_args));
  writer_options.storage = options.storage;
  if (options.compute_stats) {
    writer_options.before_publish = [&options](const std::string& temporary_file) {
      StatsOptions stats_options;
      stats_options.cancel = options.cancel;
      return ComputeAndStoreStats(temporary_file, stats_options).status();
    };
  }
  absl::StatusOr<std::unique_ptr<DatasetWriter>> writer = DatasetWriter::Create(writer_options);
  if (!writer.ok()) return WritingOutput(writer.status(), options.output);
  ROBOLOOP_RETURN_IF_ERROR(WriteMergedDemos(readers, writer->get(), options.output, options.cancel));
  ROBOLOOP_RETURN_IF_ERROR(WritingOutput((*writer)->Close(), options.output));
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<DatasetReader> merged, OpenStrict(options.output));
  return merged->layout();
}

absl::StatusOr<SplitAssignment> AssignSplit(const std::vector<std::string>& demos,
                                            double valid_fraction, uint64_t seed) {
  if (!(valid_fraction >= 0 && valid_fraction < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("valid fraction ", valid_fraction, " is not in [0, 1)"));
  }
  std::vector<size_t> order(demos.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937_64 random(seed);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[random() % i]);
  const size_t num_valid = static_cast<size_t>(std::llround(valid_fraction * demos.size()));
  if (num_valid == demos.size() || (valid_fraction > 0 && num_valid == 0)) {
    return absl::InvalidArgumentError(absl::StrCat("a valid fraction of ", valid_fraction, " of ", demos.size(),
                                                   " demos leaves ", demos.size() - num_valid, " training and ",
                                                   num_valid, " valid demos; each split needs at least one"));
  }
  std::vector<bool> is_valid(demos.size(), false);
  for (size_t i = 0; i < num_valid; ++i) is_valid[order[i]] = true;
  SplitAssignment assignment;
  for (size_t i = 0; i < demos.size(); ++i) {
    (is_valid[i] ? assignment.valid : assignment.train).push_back(demos[i]);
  }
  return assignment;
}

absl::StatusOr<SplitAssignment> SplitDataset(const std::string& path, double valid_fraction,
                                             uint64_t seed) {
  std::vector<std::string> demos;
  {
    ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<DatasetReader> reader, OpenStrict(path));
    for (const DemoLayout& demo : reader->layout().demos) demos.push_back(demo.name);
  }
  absl::StatusOr<SplitAssignment> assignment = AssignSplit(demos, valid_fraction, seed);
  if (!assignment.ok()) return Annotate(assignment.status(), path);
  ROBOLOOP_RETURN_IF_ERROR(WriteSplitMasks(path, *assignment));
  return assignment;
}

absl::StatusOr<RegistrationMetadata> PrepareRegistration(const std::string& path, const std::string& scratch_path,
                                                         const StatsOptions& options) {
  ROBOLOOP_ASSIGN_OR_RETURN(ValidationResult validation, ValidateFile(path, ValidationOptions()));
  RegistrationMetadata result;
  result.upload_path = path;
  if (!validation.layout.has_stats) {
    std::error_code error;
    std::filesystem::copy_file(path, scratch_path, std::filesystem::copy_options::overwrite_existing, error);
    if (error) return ErrnoStatus(error.value(), absl::StrCat("copying ", path, " to ", scratch_path));
    ROBOLOOP_RETURN_IF_ERROR(ComputeAndStoreStats(scratch_path, options).status());
    result.upload_path = scratch_path;
  }
  ROBOLOOP_ASSIGN_OR_RETURN(DatasetInfo info, GetInfo(result.upload_path));
  nlohmann::json splits = nlohmann::json::object();
  for (const auto& [split, demos] : info.layout.masks) splits[split] = demos.size();
  const nlohmann::json full = InfoToJson(info);
  result.metadata = {{"format", "robomimic_hdf5"},
                     {"format_version", 1},
                     {"num_demos", info.layout.demos.size()},
                     {"total_steps", info.layout.total_steps},
                     {"env_args", full["env_args"]},
                     {"features", full["features"]},
                     {"stats", full["stats"]},
                     {"splits", splits},
                     {"lineage", full["lineage"]}};
  result.parent_ids = ParentDatasetIds(info.layout.lineage);
  return result;
}

}  // namespace roboloop::data
