#include "cli/data_tools.h"

#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/flags.h"
#include "common/signal_cancellation.h"
#include "common/status.h"
#include "data/aloha_import.h"
#include "data/dataset_reader.h"
#include "data/dataset_writer.h"
#include "data/lerobot_runtime.h"
#include "data/tools.h"
#include "data/validation_in_child.h"
#include "nlohmann/json.hpp"

namespace roboloop::cli {
namespace {

using namespace roboloop::data;

// Options of all data commands; owned by the app through a shared_ptr in the callbacks.
struct CliOptions {
  std::string file;
  std::string format = "table";
  bool strict = false;
  bool structure_only = false;  // validate: no scan of the values
  double time_limit_s = -1;  // validate: seconds the check may take (0 = no limit, < 0 = by file size)
  std::vector<std::string> inputs;
  std::string output;
  bool overwrite = false;
  bool write = false;  // stats: store the statistics in the file
  double valid_fraction = 0;  // split: --valid (required)
  uint64_t seed = 0;
  std::string env_args = R"({"env_name": "aloha", "env_kwargs": {}})";
  double fps = 0;                        // export lerobot: frames per second (0 = the file's)
  std::string task;                      // export lerobot: task string of demos without one
  std::string codec = "h264";            // export lerobot: h264 or av1
  double data_file_mb = 100;             // export lerobot: size at which a data file rolls over
  double video_file_mb = 200;            // export lerobot: size at which a video file rolls over
  int64_t files_per_chunk = 1000;        // export lerobot: files per chunk folder
  DatasetResolver resolve_input;     // info: reference -> file
  wiring::RegistryTarget registry;   // info: where a reference is looked up
};

// A LeRobot folder given where an HDF5 file is expected: an error that says which commands take it.
absl::Status CheckNotLeRobotFolder(const std::string& file) {
  if (!IsLeRobotFolder(file)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      file, ": is a LeRobot dataset folder, expected an HDF5 file (`roboloop data import lerobot ", file,
      " -o FILE.hdf5` converts it; `data register` and `train` also take the folder as is)"));
}

// Runs `work` with SIGINT and SIGTERM cancelling the token it is given. When they stopped it, the error says
// the command was interrupted and `output` was not written, and the command exits kExitCancelled.
absl::Status RunInterruptible(const std::string& output,
                              const std::function<absl::Status(const common::CancellationToken*)>& work) {
  common::CancellationToken cancel;
  ROBOLOOP_ASSIGN_OR_RETURN(auto signals, common::SignalCancellation::Create(&cancel));
  const absl::Status status = work(&cancel);
  signals.reset();
  if (status.ok() || !cancel.IsCancelled()) return status;
  return WithExitCode(
      absl::CancelledError(absl::StrCat("interrupted (", cancel.Reason(), "); ", output, " was not written")),
      kExitCancelled);
}

void AddFormat(CLI::App* command, CliOptions* options) {
  command->add_option("--format", options->format, "Output format: table or json")
      ->check(CLI::IsMember({"table", "json"}));
}

// The file the command reads: its argument, or the cached copy of the registry reference it names.
absl::StatusOr<std::string> InputFile(const CliOptions& options) {
  if (!options.resolve_input) return options.file;
  return options.resolve_input(options.file, options.registry);
}

absl::Status Info(const CliOptions& options, std::ostream& out) {
  ROBOLOOP_ASSIGN_OR_RETURN(const std::string file, InputFile(options));
  ROBOLOOP_RETURN_IF_ERROR(CheckNotLeRobotFolder(file));
  ROBOLOOP_RETURN_IF_ERROR(ScreenFileInChildProcess(file));
  absl::StatusOr<DatasetInfo> info = GetInfo(file);
  if (!info.ok()) return info.status();
  out << (options.format == "json" ? InfoToJson(*info).dump(2) + "\n" : InfoToTable(*info));
  return absl::OkStatus();
}

// The time `data validate` gives the check of `file`: --time-limit-s, or by default one that grows with the file.
absl::Duration ValidationTimeLimit(const CliOptions& options, const std::string& file) {
  if (options.time_limit_s == 0) return absl::InfiniteDuration();
  if (options.time_limit_s > 0) return absl::Seconds(options.time_limit_s);
  return DefaultValidationTimeLimit(file);
}

absl::Status Validate(const CliOptions& options, std::ostream& out) {
  ROBOLOOP_ASSIGN_OR_RETURN(const std::string file, InputFile(options));
  ROBOLOOP_RETURN_IF_ERROR(CheckNotLeRobotFolder(file));
  ValidationOptions validation;
  validation.nan_policy = options.strict ? NanPolicy::kStrict : NanPolicy::kLenient;
  validation.scan_values = !options.structure_only;
  absl::StatusOr<ValidationSummary> result =
      ValidateFileInChildProcess(file, validation, ValidationTimeLimit(options, file));
  if (!result.ok()) return result.status();
  if (options.format == "json") {
    nlohmann::json warnings = nlohmann::json::array();
    for (const ValidationIssue& issue : result->warnings) warnings.push_back(issue.ToString());
    out << nlohmann::json{{"path", options.file}, {"valid", true}, {"warnings", warnings}}.dump(2)
        << "\n";
    return absl::OkStatus();
  }
  out << absl::StrFormat("%s: valid (%d demos, %d steps)\n", options.file, result->demos, result->total_steps);
  for (const ValidationIssue& issue : result->warnings) out << "warning: " << issue.ToString() << "\n";
  return absl::OkStatus();
}

// What `data stats` did with the file, for the user: it is only written with --write.
std::string StatsNotice(const CliOptions& options) {
  return options.write ? absl::StrFormat("%s: statistics stored in the file's `stats` group\n", options.file)
                       : absl::StrFormat("%s: not modified (pass --write to store the statistics in the file)\n",
                                         options.file);
}

absl::Status Stats(const CliOptions& options, std::ostream& out) {
  ROBOLOOP_ASSIGN_OR_RETURN(const std::string file, InputFile(options));
  if (options.write && file != options.file) {
    return absl::InvalidArgumentError(absl::StrCat(options.file, ": --write needs a file; a registered dataset is "
                                                   "never modified (fetch it with `roboloop registry get`)"));
  }
  ROBOLOOP_RETURN_IF_ERROR(CheckNotLeRobotFolder(file));
  ROBOLOOP_RETURN_IF_ERROR(ScreenFileInChildProcess(file));
  absl::StatusOr<DatasetStats> stats =
      options.write ? ComputeAndStoreStats(file, StatsOptions()) : ComputeFileStats(file, StatsOptions());
  if (!stats.ok()) return stats.status();
  if (options.format == "json") {
    out << StatsToJson(*stats).dump(2) << "\n";
    std::fputs(StatsNotice(options).c_str(), stderr);  // stdout stays one JSON document
    return absl::OkStatus();
  }
  out << absl::StrFormat("%-20s %6s %12s %12s %12s %12s\n", "feature", "dims", "mean[0]",
                         "std[0]", "min[0]", "max[0]");
  bool images = false;
  for (const FeatureStats& feature : *stats) {
    out << absl::StrFormat("%-20s %6d %12.5g %12.5g %12.5g %12.5g\n", feature.name,
                           feature.mean.size(), feature.mean[0], feature.std[0], feature.min[0],
                           feature.max[0]);
    images = images || feature.per_channel;
  }
  if (images) out << "image keys (obs/*_image): statistics per RGB channel over pixel values / 255\n";
  out << StatsNotice(options);
  return absl::OkStatus();
}

absl::Status Merge(const CliOptions& options, std::ostream& out) {
  ROBOLOOP_RETURN_IF_ERROR(CheckOutputFolder(options.output));
  MergeOptions merge;
  for (const std::string& input : options.inputs) ROBOLOOP_RETURN_IF_ERROR(ScreenFileInChildProcess(input));
  merge.inputs = options.inputs;
  merge.output = options.output;
  merge.overwrite = options.overwrite;
  absl::StatusOr<DatasetLayout> layout;
  ROBOLOOP_RETURN_IF_ERROR(RunInterruptible(options.output, [&](const common::CancellationToken* cancel) {
    merge.cancel = cancel;
    layout = MergeDatasets(merge);
    return layout.status();
  }));
  out << absl::StrFormat("%s: merged %d files, %d demos, %d steps\n", options.output,
                         options.inputs.size(), layout->demos.size(), layout->total_steps);
  return absl::OkStatus();
}

absl::Status Split(const CliOptions& options, std::ostream& out) {
  ROBOLOOP_RETURN_IF_ERROR(CheckNotLeRobotFolder(options.file));
  ROBOLOOP_RETURN_IF_ERROR(ScreenFileInChildProcess(options.file));
  absl::StatusOr<SplitAssignment> split =
      SplitDataset(options.file, options.valid_fraction, options.seed);
  if (!split.ok()) return split.status();
  out << absl::StrFormat("%s: mask/train %d demos, mask/valid %d demos\n", options.file,
                         split->train.size(), split->valid.size());
  return absl::OkStatus();
}

absl::Status Import(const CliOptions& options, std::ostream& out) {
  ROBOLOOP_RETURN_IF_ERROR(CheckOutputFolder(options.output));
  AlohaImportOptions import;
  import.input_dir = options.file;
  import.output_path = options.output;
  import.overwrite = options.overwrite;
  import.env_args_json = options.env_args;
  absl::StatusOr<AlohaImportResult> result = ImportAloha(import);
  if (!result.ok()) return result.status();
  out << absl::StrFormat("%s: imported %d episodes, %d steps from %s\n", options.output,
                         result->num_episodes, result->total_steps, options.file);
  return absl::OkStatus();
}

absl::Status ImportFromLeRobot(const CliOptions& options, std::ostream& out) {
  ROBOLOOP_RETURN_IF_ERROR(CheckOutputFolder(options.output));
  LeRobotImportOptions import;
  import.input_dir = options.file;
  import.output_path = options.output;
  import.overwrite = options.overwrite;
  ROBOLOOP_ASSIGN_OR_RETURN(const LeRobotApi* lerobot, LoadLeRobot());
  absl::StatusOr<LeRobotImportResult> result;
  ROBOLOOP_RETURN_IF_ERROR(RunInterruptible(options.output, [&](const common::CancellationToken* cancel) {
    import.cancel = cancel;
    result = lerobot->import_lerobot(import);
    return result.status();
  }));
  out << absl::StrFormat("%s: imported %d episodes, %d steps, %d video frames from %s\n", options.output,
                         result->num_episodes, result->total_steps, result->frames_decoded, options.file);
  for (const std::string& feature : result->features) out << "  " << feature << "\n";
  return absl::OkStatus();
}

// Without --fps the export takes the frame rate `file` records; one that records none is a usage error (exit 2).
absl::Status CheckRecordedFramesPerSecond(const std::string& file) {
  DatasetReader::Options reader_options;
  reader_options.path = file;
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<DatasetReader> reader, DatasetReader::Open(reader_options));
  const absl::Status recorded = RecordedFramesPerSecond(file, reader->layout().env_args_json).status();
  return recorded.ok() ? recorded : WithExitCode(recorded, kExitUsage);
}

absl::Status ExportToLeRobot(const CliOptions& options, std::ostream& out) {
  LeRobotExportOptions export_options;
  ROBOLOOP_RETURN_IF_ERROR(CheckNotLeRobotFolder(options.file));
  ROBOLOOP_RETURN_IF_ERROR(ScreenFileInChildProcess(options.file));
  if (options.fps == 0) ROBOLOOP_RETURN_IF_ERROR(CheckRecordedFramesPerSecond(options.file));
  export_options.input_path = options.file;
  export_options.output_dir = options.output;
  export_options.overwrite = options.overwrite;
  export_options.fps = options.fps;
  if (!options.task.empty()) export_options.task = options.task;
  export_options.encoder = options.codec == "av1" ? "libaom-av1" : "libx264";
  export_options.data_file_mb = options.data_file_mb;
  export_options.video_file_mb = options.video_file_mb;
  export_options.files_per_chunk = options.files_per_chunk;
  ROBOLOOP_ASSIGN_OR_RETURN(const LeRobotApi* lerobot, LoadLeRobot());
  absl::StatusOr<LeRobotExportResult> result;
  ROBOLOOP_RETURN_IF_ERROR(RunInterruptible(options.output, [&](const common::CancellationToken* cancel) {
    export_options.cancel = cancel;
    result = lerobot->export_lerobot(export_options);
    return result.status();
  }));
  out << absl::StrFormat("%s: exported %d episodes, %d frames, %d video frames (%s) from %s\n", options.output,
                         result->num_episodes, result->total_frames, result->frames_encoded, options.codec,
                         options.file);
  return absl::OkStatus();
}

using Tool = absl::Status (*)(const CliOptions&, std::ostream&);
// Checks flag values CLI11 cannot (NaN, a value given only with another): OK or a UsageError.
using FlagCheck = std::function<absl::Status()>;

// Binds `command` to run `tool` after parsing and `check_flags` (may be empty); its output goes to
// stdout, and a failure is reported as "data <name>: <what>" (exit 1; a failed flag check exits 2).
void BindTool(CommandRunner& runner, CLI::App* command, const std::string& name, Tool tool,
              const std::shared_ptr<CliOptions>& options, FlagCheck check_flags = nullptr) {
  runner.Bind(command, [name, tool, options, check_flags]() -> absl::Status {
    if (check_flags) ROBOLOOP_RETURN_IF_ERROR(check_flags());
    std::ostringstream out;
    const absl::Status status = tool(*options, out);
    std::fputs(out.str().c_str(), stdout);
    return Annotate(status, "data " + name);
  });
}

void AddMerge(CLI::App* data, CommandRunner& runner, const std::shared_ptr<CliOptions>& options) {
  CLI::App* merge = data->add_subcommand("merge", "Merge datasets of the same spec");
  merge->add_option("INPUTS", options->inputs, "Input files (two or more)")->required();
  merge->add_option("-o,--output", options->output, "Merged file")->required();
  merge->add_flag("--overwrite", options->overwrite, "Replace an existing output");
  runner.Bind(merge, [options]() -> absl::Status {
    if (options->inputs.size() < 2) return UsageError("data merge needs at least two input files");
    std::ostringstream out;
    const absl::Status status = Merge(*options, out);
    std::fputs(out.str().c_str(), stdout);
    return Annotate(status, "data merge");
  });
}

void AddImport(CLI::App* data, CommandRunner& runner, const std::shared_ptr<CliOptions>& options) {
  CLI::App* import = data->add_subcommand("import", "Import episodes from another format");
  import->require_subcommand(1);
  CLI::App* aloha = import->add_subcommand("aloha", "A folder of ALOHA/ACT episode_<i>.hdf5");
  aloha->add_option("DIR", options->file, "Folder of episodes")->required();
  aloha->add_option("-o,--output", options->output, "File to write (robomimic-layout HDF5)")->required();
  aloha->add_option("--env-args", options->env_args, "JSON object stored as the output's env_args");
  aloha->add_flag("--overwrite", options->overwrite, "Replace an existing output");
  BindTool(runner, aloha, "import aloha", Import, options, [options] {
    if (nlohmann::json::parse(options->env_args, nullptr, false).is_object()) return absl::OkStatus();
    return UsageError(absl::StrCat("--env-args '", options->env_args, "': not a JSON object"));
  });
  CLI::App* lerobot = import->add_subcommand("lerobot", "A LeRobot v3 dataset folder (parquet tables, mp4 videos)");
  lerobot->add_option("DIR", options->file, "LeRobot dataset folder (holding meta/info.json)")->required();
  lerobot->add_option("-o,--output", options->output, "File to write (robomimic-layout HDF5)")->required();
  lerobot->add_flag("--overwrite", options->overwrite, "Replace an existing output");
  BindTool(runner, lerobot, "import lerobot", ImportFromLeRobot, options);
}

void AddExport(CLI::App* data, CommandRunner& runner, const std::shared_ptr<CliOptions>& options) {
  CLI::App* export_command = data->add_subcommand("export", "Export episodes to another format");
  export_command->require_subcommand(1);
  CLI::App* lerobot = export_command->add_subcommand("lerobot", "A LeRobot v3 dataset folder (parquet tables, mp4 videos)");
  lerobot->add_option("FILE", options->file, "File to export (robomimic-layout HDF5)")->required();
  lerobot->add_option("-o,--output", options->output, "LeRobot dataset folder to write")->required();
  CLI::Option* fps =
      lerobot->add_option("--fps", options->fps, "Frames per second (default: the file's, recorded by a LeRobot import)");
  lerobot->add_option("--task", options->task, "Task string of demos that have none");
  lerobot->add_option("--codec", options->codec, "Video codec")->check(CLI::IsMember({"h264", "av1"}));
  lerobot->add_option("--data-file-mb", options->data_file_mb, "Start a new data file once one holds this many MB")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  lerobot->add_option("--video-file-mb", options->video_file_mb, "Start a new video file once one is this many MB")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  lerobot->add_option("--files-per-chunk", options->files_per_chunk, "Files per chunk-NNN folder")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  lerobot->add_flag("--overwrite", options->overwrite, "Replace an existing output folder");
  BindTool(runner, lerobot, "export lerobot", ExportToLeRobot, options, [options, fps] {
    if (fps->count() == 0 || (std::isfinite(options->fps) && options->fps > 0)) return absl::OkStatus();
    return UsageError(absl::StrFormat("--fps %g: expected a positive, finite number of frames per second", options->fps));
  });
}

}  // namespace

void AddDataToolCommands(CLI::App* data, CommandRunner& runner, DatasetResolver resolve_input) {
  auto options = std::make_shared<CliOptions>();
  options->resolve_input = std::move(resolve_input);

  CLI::App* info = data->add_subcommand("info", "Demos, lengths, features, stats, splits, lineage");
  info->add_option("FILE", options->file, "Dataset file, or a registry reference (name:vN, name@latest, id)")
      ->required();
  AddFormat(info, options.get());
  AddRegistryTargetFlags(info, &options->registry);
  BindTool(runner, info, "info", Info, options);

  CLI::App* validate = data->add_subcommand("validate", "Check structure, lengths and values");
  validate->add_option("FILE", options->file, "Dataset file, or a registry reference")->required();
  AddRegistryTargetFlags(validate, &options->registry);
  validate->add_flag("--strict", options->strict, "NaN/Inf values are errors, not warnings");
  validate->add_flag("--structure-only", options->structure_only,
                     "Check groups, shapes, dtypes, lengths and attributes without reading the values (fast on "
                     "large files; no NaN/Inf check)")
      ->excludes("--strict");
  CLI::Option* time_limit = validate->add_option("--time-limit-s", options->time_limit_s,
                                                 "Seconds the check may take before it is stopped as a corrupt file "
                                                 "(0 = no limit; default 60 plus 1 per 4 MiB of the file)");
  AddFormat(validate, options.get());
  BindTool(runner, validate, "validate", Validate, options, [options, time_limit] {
    if (time_limit->count() == 0 || options->time_limit_s >= 0) return absl::OkStatus();
    return UsageError(absl::StrFormat("--time-limit-s %g: expected seconds >= 0", options->time_limit_s));
  });

  CLI::App* stats = data->add_subcommand(
      "stats", "Print normalization statistics; with --write also store them in the file's `stats` group");
  stats->add_option("FILE", options->file, "Dataset file, or a registry reference (without --write)")->required();
  AddRegistryTargetFlags(stats, &options->registry);
  stats->add_flag("--write", options->write, "Store the statistics in the file (it is modified)");
  AddFormat(stats, options.get());
  BindTool(runner, stats, "stats", Stats, options);

  AddMerge(data, runner, options);

  CLI::App* split = data->add_subcommand("split", "Write mask/train and mask/valid");
  split->add_option("FILE", options->file, "Dataset file")->required();
  split->add_option("--valid", options->valid_fraction,
                    "Fraction of demos held out, in [0, 1) (required: an existing split is replaced)")
      ->required();
  split->add_option("--seed", options->seed, "Shuffle seed, 0..2^64-1")->check(CLI::NonNegativeNumber)->capture_default_str();
  BindTool(runner, split, "split", Split, options, [options] {
    if (options->valid_fraction >= 0 && options->valid_fraction < 1) return absl::OkStatus();
    return UsageError(absl::StrFormat("--valid %g: expected a fraction in [0, 1)", options->valid_fraction));
  });

  AddImport(data, runner, options);
  AddExport(data, runner, options);
}

}  // namespace roboloop::cli
