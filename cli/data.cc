#include "cli/data.h"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <spdlog/spdlog.h>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/data_tools.h"
#include "cli/flags.h"
#include "common/fs.h"
#include "common/status.h"
#include "common/store_layout.h"
#include "data/lerobot_runtime.h"
#include "data/stats.h"
#include "data/tools.h"
#include "data/validation_in_child.h"
#include "wiring/registry_connection.h"

namespace roboloop::cli {
namespace {

// Flags of `data register`.
struct RegisterFlags {
  wiring::RegistryTarget target;
  std::string file;
  std::string name;
};

// Parents recorded in the file's lineage that the registry knows; the rest stay only in the
// metadata's lineage (e.g. parents that were never registered).
std::vector<std::string> RegisteredParents(registry::RegistryClient& client,
                                           const std::vector<std::string>& parent_ids) {
  std::vector<std::string> known;
  for (const std::string& id : parent_ids) {
    if (client.GetDataset(id).ok()) {
      known.push_back(id);
    } else {
      spdlog::warn("parent dataset {} is not in the registry; kept in the lineage metadata only", id);
    }
  }
  return known;
}

// True for arguments that name a file rather than a registry reference (which never holds '/'
// nor ends in ".hdf5").
bool LooksLikePath(const std::string& text) {
  return text.find('/') != std::string::npos || absl::EndsWith(text, ".hdf5");
}

// Turns a registry reference into a local copy of the dataset under ROOT/cache/datasets/
// (downloaded once, its sha256 checked on every use); an existing file is returned unchanged.
absl::StatusOr<std::string> ResolveDatasetFile(const std::string& file_or_ref,
                                               const wiring::RegistryTarget& target) {
  if (PathExists(file_or_ref)) return file_or_ref;
  ROBOLOOP_ASSIGN_OR_RETURN(auto connection, wiring::RegistryConnection::Open(target));
  absl::StatusOr<v1::Dataset> dataset = connection->client().GetDataset(file_or_ref);
  if (!dataset.ok()) {
    return absl::NotFoundError(absl::StrCat("'", file_or_ref, "' is neither a file nor a dataset in the registry (",
                                            dataset.status().message(), ")"));
  }
  // CachedCopy checks an existing copy's sha256: a cached file edited in place is fetched again.
  return connection->client().CachedCopy(dataset->blob().sha256(), StoreLayout(target.root).DatasetCache(), ".hdf5");
}

}  // namespace

absl::Status RegisterDatasetFile(const wiring::RegistryTarget& target, const std::string& file_or_folder,
                                 const std::string& name) {
  std::string path = file_or_folder;
  if (data::IsLeRobotFolder(file_or_folder)) {
    ROBOLOOP_ASSIGN_OR_RETURN(const data::LeRobotApi* lerobot, data::LoadLeRobot());
    ROBOLOOP_ASSIGN_OR_RETURN(path, lerobot->import_lerobot_cached(file_or_folder, StoreLayout(target.root).DatasetCache()));
    std::printf("imported LeRobot dataset %s as %s\n", file_or_folder.c_str(), path.c_str());
  }
  // A file without statistics gets them in a copy beside it, which is uploaded and, once the registry has accepted
  // it, put in the file's place: a failed registration leaves the file as it was, a successful one leaves it
  // identical to the registered blob (so lineage that records its sha256 finds it in the registry).
  const std::string scratch = PartialPathFor(path);
  absl::Cleanup remove_scratch = [&scratch] {
    std::error_code ignored;
    std::filesystem::remove(scratch, ignored);
  };
  ROBOLOOP_ASSIGN_OR_RETURN(data::RegistrationMetadata metadata,
                            data::PrepareRegistration(path, scratch, data::StatsOptions()));
  ROBOLOOP_ASSIGN_OR_RETURN(auto connection, wiring::RegistryConnection::Open(target));
  registry::RegistryClient& client = connection->client();
  ROBOLOOP_ASSIGN_OR_RETURN(v1::BlobInfo blob, client.UploadFile(metadata.upload_path));
  v1::RegisterDatasetRequest request;
  request.set_name(name);
  request.set_blob_sha256(blob.sha256());
  request.set_metadata_json(metadata.metadata.dump());
  for (const std::string& parent : RegisteredParents(client, metadata.parent_ids)) {
    request.add_parent_refs(parent);
  }
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Dataset dataset, client.RegisterDataset(request));
  if (metadata.upload_path == scratch) {
    ROBOLOOP_RETURN_IF_ERROR(RenameDurable(scratch, path));
    std::printf("%s: statistics stored in the file's `stats` group\n", path.c_str());
  }
  std::printf("registered dataset %s:v%d %s (%d parents)\n", dataset.name().c_str(), dataset.version(),
              dataset.id().c_str(), dataset.parent_ids_size());
  return absl::OkStatus();
}

CLI::App* AddDataCommands(CLI::App& app, CommandRunner& runner) {
  CLI::App* data_command = app.add_subcommand("data", "Episode datasets (robomimic-layout HDF5)");
  data_command->require_subcommand(1);
  AddDataToolCommands(data_command, runner,
                      [](const std::string& file_or_ref,
                         const wiring::RegistryTarget& target) -> absl::StatusOr<std::string> {
                        if (LooksLikePath(file_or_ref)) return file_or_ref;
                        return ResolveDatasetFile(file_or_ref, target);
                      });
  auto flags = std::make_shared<RegisterFlags>();
  CLI::App* reg = data_command->add_subcommand(
      "register",
      "Validate FILE and register it in the registry (a file without statistics gets them once the registry has "
      "accepted it; a failed registration leaves FILE as it was)");
  reg->add_option("FILE", flags->file,
                  "robomimic-layout HDF5 file, or a LeRobot v3 dataset folder (imported first, cached by content)")
      ->required();
  reg->add_option("--name", flags->name, "Dataset name")->required();
  AddRegistryTargetFlags(reg, &flags->target);
  runner.Bind(reg, [flags] {
    if (!data::IsLeRobotFolder(flags->file)) ROBOLOOP_RETURN_IF_ERROR(data::ScreenFileInChildProcess(flags->file));
    return RegisterDatasetFile(flags->target, flags->file, flags->name);
  });
  return data_command;
}

}  // namespace roboloop::cli
