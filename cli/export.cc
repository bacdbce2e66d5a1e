#include "cli/export.h"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/exported_python_module.h"
#include "cli/flags.h"
#include "common/fs.h"
#include "common/status.h"
#include "registry/checkpoint_manifest.h"
#include "train/safetensors.h"
#include "wiring/registry_connection.h"

namespace roboloop::cli {
namespace {

// Flags of `roboloop export`, filled by CLI11 before the action runs.
struct ExportFlags {
  wiring::RegistryTarget target;
  std::string ref;
  std::string output;
  bool force = false;
};

// The checkpoint `ref` names; a clear error when it names a dataset or nothing.
absl::StatusOr<v1::Checkpoint> ResolveCheckpoint(registry::RegistryClient& client,
                                                 const std::string& ref) {
  absl::StatusOr<v1::Checkpoint> checkpoint = client.GetCheckpoint(ref);
  if (checkpoint.ok() || !absl::IsNotFound(checkpoint.status())) return checkpoint;
  absl::StatusOr<v1::Dataset> dataset = client.GetDataset(ref);
  if (dataset.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("'", ref, "' is dataset ", dataset->name(), ":v",
                                                   dataset->version(),
                                                   ", not a checkpoint: only checkpoints export"));
  }
  return checkpoint.status();
}

// The sha256 of the checkpoint's policy blob, or NotFound naming the checkpoint.
absl::StatusOr<std::string> PolicyBlob(const v1::Checkpoint& checkpoint) {
  for (const v1::BlobRef& blob : checkpoint.blobs()) {
    if (blob.role() == registry::kPolicyBlobRole) return blob.sha256();
  }
  return absl::NotFoundError(absl::StrCat("checkpoint ", checkpoint.model(), ":v",
                                          checkpoint.version(), " has no '", registry::kPolicyBlobRole,
                                          "' blob to export"));
}

// FailedPrecondition when `dir` exists and is not a folder (a file, say): nothing can be exported into it.
absl::Status CheckOutputIsNoFile(const std::string& dir) {
  std::error_code error;
  const std::filesystem::file_status found = std::filesystem::status(dir, error);
  if (!std::filesystem::exists(found) || std::filesystem::is_directory(found)) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("-o/--output ", dir, " exists and is not a folder: export writes a folder of files"));
}

// Refuses an existing non-empty `dir` unless `force`; creates it otherwise.
absl::Status PrepareOutputDir(const std::string& dir, bool force) {
  if (PathExists(dir) && !force) {
    ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::string> entries, ListDir(dir));
    if (!entries.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "output folder ", dir, " is not empty (pass --force to overwrite the export files)"));
    }
  }
  return MakeDirs(dir);
}

// config.json of the export folder (the format roboloop_policy.load_policy reads).
absl::StatusOr<nlohmann::json> ExportConfig(const v1::Checkpoint& checkpoint,
                                            const registry::CheckpointManifest& manifest) {
  ROBOLOOP_ASSIGN_OR_RETURN(const registry::PolicyKind* kind, manifest.Kind());
  if (!kind->exportable) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint ", checkpoint.model(), ":v", checkpoint.version(),
                     " has policy kind '", kind->name, "', which does not export (known: ",
                     absl::StrJoin(registry::ExportablePolicyKindNames(), ", "), ")"));
  }
  const nlohmann::json written = manifest.ToJson();
  // Every option written out, defaults filled by the kind's schema: roboloop_policy.py keeps no
  // copy of the defaults.
  nlohmann::json policy = written.at("policy");
  ROBOLOOP_ASSIGN_OR_RETURN(policy["options"], manifest.CompleteOptions());
  return nlohmann::json{{"format", "roboloop-policy"},
                        {"version", 1},
                        {"policy", policy},
                        {"obs_spec", written.at("obs_spec")},
                        {"action_spec", written.at("action_spec")},
                        {"action_chunk", written.at("action_chunk")},
                        {"checkpoint_id", checkpoint.id()},
                        {"model", checkpoint.model()}};
}

// The outermost folder on the way to `dir` that does not exist yet ("" when `dir` exists):
// what a failed export removes, so that it leaves nothing behind.
std::string FirstMissingFolder(const std::string& dir) {
  std::filesystem::path missing;
  std::error_code error;
  for (std::filesystem::path p = std::filesystem::absolute(dir, error).lexically_normal();
       !p.empty() && !std::filesystem::exists(p, error); p = p.parent_path()) {
    missing = p;
    if (p == p.parent_path()) break;
  }
  return missing.string();
}

// Downloads the policy blob as `dir`/model.safetensors once it reads as a safetensors file (a
// truncated or foreign blob would only fail in Python); the old file stays until then.
absl::Status WritePolicyWeights(registry::RegistryClient& client, const v1::Checkpoint& checkpoint,
                                const std::string& policy_sha256, const std::string& dir) {
  const std::string path = JoinPath(dir, "model.safetensors");
  const std::string fetched = path + ".fetched";
  ROBOLOOP_RETURN_IF_ERROR(client.DownloadToFile(policy_sha256, fetched));
  absl::StatusOr<train::TensorMap> weights = train::ReadSafetensors(fetched);
  std::error_code error;
  if (!weights.ok()) {
    std::filesystem::remove(fetched, error);
    return absl::DataLossError(absl::StrCat("checkpoint ", checkpoint.model(), ":v", checkpoint.version(),
                                            ": its policy blob is no policy PyTorch could load: ",
                                            weights.status().message()));
  }
  std::filesystem::rename(fetched, path, error);
  if (error) return absl::InternalError(absl::StrCat("cannot rename ", fetched, " to ", path, ": ", error.message()));
  return absl::OkStatus();
}

// Writes the four files of the export folder into `dir` (created when missing).
absl::Status WriteExportFolder(registry::RegistryClient& client, const ExportFlags& flags,
                               const v1::Checkpoint& checkpoint, const std::string& policy_sha256,
                               const nlohmann::json& config, const registry::CheckpointManifest& manifest) {
  ROBOLOOP_RETURN_IF_ERROR(PrepareOutputDir(flags.output, flags.force));
  ROBOLOOP_RETURN_IF_ERROR(WritePolicyWeights(client, checkpoint, policy_sha256, flags.output));
  ROBOLOOP_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(flags.output, "config.json"), config.dump(2) + "\n"));
  ROBOLOOP_RETURN_IF_ERROR(
      WriteFileAtomic(JoinPath(flags.output, "normalization.json"), manifest.normalization.dump(2) + "\n"));
  return WriteFileAtomic(JoinPath(flags.output, "roboloop_policy.py"), ExportedPythonModule());
}

absl::Status Export(registry::RegistryClient& client, const ExportFlags& flags) {
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Checkpoint checkpoint, ResolveCheckpoint(client, flags.ref));
  ROBOLOOP_ASSIGN_OR_RETURN(std::string policy_sha256, PolicyBlob(checkpoint));
  absl::StatusOr<registry::CheckpointManifest> manifest =
      registry::CheckpointManifest::Parse(checkpoint.manifest_json());
  if (!manifest.ok()) {
    return absl::DataLossError(absl::StrCat("checkpoint ", checkpoint.id(), ": ", manifest.status().message()));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(nlohmann::json config, ExportConfig(checkpoint, *manifest));
  const std::string created = FirstMissingFolder(flags.output);
  absl::Status written = WriteExportFolder(client, flags, checkpoint, policy_sha256, config, *manifest);
  if (!written.ok()) {
    std::error_code ignored;
    if (!created.empty()) std::filesystem::remove_all(created, ignored);
    return written;
  }
  std::printf("exported checkpoint %s:v%d (%s) to %s\n", checkpoint.model().c_str(),
              checkpoint.version(), checkpoint.id().c_str(), flags.output.c_str());
  return absl::OkStatus();
}

}  // namespace

void AddExportCommand(CLI::App& app, CommandRunner& runner) {
  auto flags = std::make_shared<ExportFlags>();
  CLI::App* command = app.add_subcommand(
      "export", "Write a checkpoint as a folder that plain PyTorch runs (roboloop_policy.py)");
  command->add_option("REF", flags->ref, "Checkpoint: id, id prefix, name:vN or name@alias")
      ->required();
  command->add_option("-o,--output", flags->output, "Destination folder")->required();
  command->add_flag("--force", flags->force, "Overwrite the export files in a non-empty folder");
  AddRegistryTargetFlags(command, &flags->target);
  runner.Bind(command, [flags]() -> absl::Status {
    if (flags->output.empty()) return UsageError("-o/--output: the destination folder is empty");
    ROBOLOOP_RETURN_IF_ERROR(CheckOutputIsNoFile(flags->output));
    ROBOLOOP_ASSIGN_OR_RETURN(auto connection, wiring::RegistryConnection::Open(flags->target));
    return Export(connection->client(), *flags);
  });
}

}  // namespace roboloop::cli
