#include "cli/registry.h"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "cli/flags.h"
#include "cli/policy_file_checkpoint.h"
#include "cli/table.h"
#include "common/fs.h"
#include "common/ids.h"
#include "common/progress.h"
#include "common/status.h"
#include "registry/names.h"
#include "registry/reference.h"
#include "registry/registry.h"
#include "sim/checkpoint_policy.h"
#include "train/dataset_set.h"
#include "wiring/registry_connection.h"
#include "wiring/tasks.h"

namespace roboloop::cli {
namespace {

// Flags of every registry subcommand, filled by CLI11 before the action runs.
struct RegistryFlags {
  wiring::RegistryTarget target;
  Format format = Format::kTable;
  std::string file;
  std::string dataset_name;
  std::string model;
  std::string manifest;
  std::vector<std::string> blobs;
  PolicyFileRegistration policy;              // --policy-file, --kind, --normalization (model from --model)
  std::string policy_options = "{}";          // --options
  std::string task;                           // --task of --policy-file
  std::vector<std::string> task_plugins;      // shared libraries adding tasks
  std::vector<std::string> yaml_tasks;        // declarative task files
  std::string metadata = "{}";
  std::vector<std::string> parents;
  std::string ref;
  std::string output;
  bool overwrite = false;                     // --overwrite of get
  std::string range;
  bool datasets = false;
  std::string dataset_ref;
  std::string alias;
  std::string since;
  int limit = 50;
  std::string order = "newest";
  std::string reason;
  bool apply = false;
  std::string partial_max_age;                // --partial-max-age of gc; "" = the registry's default
};

std::string ShortId(const std::string& id) { return id.substr(0, 12); }


// The progress bar of one transfer, labelled "<verb> <name>": counts in the largest of B, KiB, MiB that the
// transfer's total holds at least once, drawn from the first report on and finished when it goes.
class TransferProgress {
 public:
  explicit TransferProgress(std::string label) : label_(std::move(label)) {}
  ~TransferProgress() {
    if (bar_) bar_->Finish();
  }

  // The RegistryClient::ProgressFn of the transfer.
  registry::RegistryClient::ProgressFn Report() {
    return [this](int64_t done, int64_t total) {
      if (!bar_) Start(total);
      bar_->Update(done >> shift_);
    };
  }

 private:
  void Start(int64_t total) {
    ProgressBar::Options options;
    options.label = label_;
    options.unit = "B";
    if (total >= (int64_t{1} << 20)) {
      shift_ = 20;
      options.unit = "MiB";
    } else if (total >= (int64_t{1} << 10)) {
      shift_ = 10;
      options.unit = "KiB";
    }
    bar_ = std::make_unique<ProgressBar>(total >> shift_, options);
  }

  std::string label_;
  int shift_ = 0;
  std::unique_ptr<ProgressBar> bar_;
};

absl::StatusOr<v1::BlobInfo> UploadWithProgress(registry::RegistryClient& client,
                                                const std::string& path) {
  TransferProgress progress("upload " + path);
  return client.UploadFile(path, progress.Report());
}

absl::Status PutDataset(registry::RegistryClient& client, const RegistryFlags& f) {
  if (f.file.empty()) return UsageError("registry put --dataset needs a FILE");
  if (!nlohmann::json::parse(f.metadata, nullptr, false).is_object()) {
    return UsageError(absl::StrCat("--metadata '", f.metadata, "': not a JSON object"));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(v1::BlobInfo blob, UploadWithProgress(client, f.file));
  v1::RegisterDatasetRequest request;
  request.set_name(f.dataset_name);
  request.set_blob_sha256(blob.sha256());
  request.set_metadata_json(f.metadata);
  for (const std::string& parent : f.parents) request.add_parent_refs(parent);
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Dataset dataset, client.RegisterDataset(request));
  std::printf("registered dataset %s:v%d %s (%lld bytes)\n", dataset.name().c_str(),
              dataset.version(), dataset.id().c_str(), static_cast<long long>(dataset.blob().size()));
  return absl::OkStatus();
}

absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON object"));
  }
  return json;
}

// Uploads every ROLE=PATH of `specs` and returns their digests by role.
absl::StatusOr<std::map<std::string, registry::BlobDigest>> UploadBlobs(registry::RegistryClient& client,
                                                                       const std::vector<std::string>& specs) {
  std::map<std::string, registry::BlobDigest> blobs;
  for (const std::string& spec : specs) {
    std::vector<std::string> parts = absl::StrSplit(spec, absl::MaxSplits('=', 1));
    if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) {
      return UsageError(absl::StrCat("--blob '", spec, "' is not ROLE=PATH"));
    }
    ROBOLOOP_ASSIGN_OR_RETURN(v1::BlobInfo blob, UploadWithProgress(client, parts[1]));
    blobs[parts[0]] = {blob.sha256(), blob.size()};
  }
  return blobs;
}

absl::Status RegisterManifest(registry::RegistryClient& client, const std::string& model,
                              const nlohmann::json& manifest) {
  v1::RegisterCheckpointRequest request;
  request.set_model(model);
  request.set_manifest_json(manifest.dump());
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Checkpoint checkpoint, client.RegisterCheckpoint(request));
  std::printf("registered checkpoint %s:v%d %s\n", checkpoint.model().c_str(), checkpoint.version(),
              checkpoint.id().c_str());
  return absl::OkStatus();
}

absl::Status PutManifest(registry::RegistryClient& client, const RegistryFlags& f) {
  ROBOLOOP_ASSIGN_OR_RETURN(nlohmann::json manifest, ReadJsonFile(f.manifest));
  ROBOLOOP_ASSIGN_OR_RETURN(auto blobs, UploadBlobs(client, f.blobs));
  for (const auto& [role, digest] : blobs) {
    manifest["blobs"][role] = {{"sha256", digest.sha256}, {"size", digest.size}};
  }
  manifest["model"] = f.model;
  return RegisterManifest(client, f.model, manifest);
}

// The manifest of --policy-file on --task, after loading the file once on the task (so that a
// policy that cannot run there is refused before anything is uploaded).
absl::StatusOr<registry::CheckpointManifest> PolicyFileManifest(const RegistryFlags& f) {
  if (f.task.empty()) return UsageError("registry put --policy-file needs --task TASK (the task the policy runs on)");
  PolicyFileRegistration registration = f.policy;
  registration.model = f.model;
  registration.options = nlohmann::json::parse(f.policy_options, nullptr, /*allow_exceptions=*/false);
  if (registration.options.is_discarded()) {
    return UsageError(absl::StrCat("--options '", f.policy_options, "' is not JSON"));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(auto tasks, wiring::TaskRegistryWith(f.task_plugins, f.yaml_tasks));
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<sim::Task> task, tasks->Create(f.task));
  ROBOLOOP_ASSIGN_OR_RETURN(registry::CheckpointManifest manifest, ManifestForPolicyFile(registration, *task));
  ROBOLOOP_RETURN_IF_ERROR(sim::LoadPolicyFile({registration.policy_file, manifest.policy, manifest.normalization},
                                               sim::PolicyRunOptions(), task->obs_spec(), task->action_spec())
                               .status());
  return manifest;
}

absl::Status PutPolicyFile(registry::RegistryClient& client, const RegistryFlags& f) {
  ROBOLOOP_ASSIGN_OR_RETURN(registry::CheckpointManifest manifest, PolicyFileManifest(f));
  ROBOLOOP_ASSIGN_OR_RETURN(manifest.blobs, UploadBlobs(client, f.blobs));
  ROBOLOOP_ASSIGN_OR_RETURN(v1::BlobInfo policy, UploadWithProgress(client, f.policy.policy_file));
  manifest.blobs[registry::kPolicyBlobRole] = {policy.sha256(), policy.size()};
  return RegisterManifest(client, f.model, manifest.ToJson());
}

absl::Status PutCheckpoint(registry::RegistryClient& client, const RegistryFlags& f) {
  if (f.manifest.empty() == f.policy.policy_file.empty()) {
    return UsageError("registry put --model needs exactly one of --policy-file FILE (with --task) or --manifest FILE");
  }
  return f.manifest.empty() ? PutPolicyFile(client, f) : PutManifest(client, f);
}

absl::Status Put(registry::RegistryClient& client, const RegistryFlags& f) {
  if (f.dataset_name.empty() == f.model.empty()) {
    return UsageError("registry put needs exactly one of --dataset NAME or --model NAME");
  }
  // Checked before any upload, which would leave an unreferenced blob behind.
  const bool dataset = !f.dataset_name.empty();
  const absl::Status name = registry::ValidateName(dataset ? "dataset" : "model", dataset ? f.dataset_name : f.model);
  if (!name.ok()) return UsageError(absl::StrCat(dataset ? "--dataset: " : "--model: ", name.message()));
  return f.dataset_name.empty() ? PutCheckpoint(client, f) : PutDataset(client, f);
}

absl::Status ParseRange(const std::string& range, int64_t* offset, int64_t* length) {
  *offset = 0;
  *length = 0;
  if (range.empty()) return absl::OkStatus();
  std::vector<std::string> parts = absl::StrSplit(range, ':');
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], offset) ||
      !absl::SimpleAtoi(parts[1], length) || *offset < 0 || *length < 0) {
    return UsageError(absl::StrCat("--range '", range, "' is not OFFSET:LENGTH"));
  }
  return absl::OkStatus();
}

// Downloads like RegistryClient::DownloadToFile, its progress labelled with `shown` (the name the user asked for,
// where `path` may be a temporary one).
absl::Status DownloadWithProgress(registry::RegistryClient& client, const std::string& sha256,
                                  const std::string& path, const std::string& shown, int64_t offset,
                                  int64_t length) {
  TransferProgress progress("download " + shown);
  return client.DownloadToFile(sha256, path, offset, length, progress.Report());
}

// Refuses an existing `-o` that `registry get` must not replace: any but an empty folder without --overwrite; with
// it, a folder for a dataset, and for a checkpoint anything but an earlier checkpoint folder (its manifest.json) or
// a folder holding the working directory.
absl::Status CheckGetOutput(const std::string& out, bool overwrite, bool checkpoint) {
  std::error_code error;
  const bool folder = std::filesystem::is_directory(out, error);
  if (!PathExists(out) || (checkpoint && folder && std::filesystem::is_empty(out, error))) {
    return absl::OkStatus();
  }
  if (!overwrite) return absl::AlreadyExistsError(absl::StrCat(out, ": already exists (pass --overwrite)"));
  if (!checkpoint) {
    return folder ? absl::FailedPreconditionError(absl::StrCat(out, ": is a folder; a dataset is fetched into a file"))
                  : absl::OkStatus();
  }
  if (!PathExists(JoinPath(out, "manifest.json"))) {
    return absl::FailedPreconditionError(absl::StrCat(
        out, ": exists and is not a checkpoint folder (no manifest.json); --overwrite replaces only an earlier one"));
  }
  if (PathIsWithin(std::filesystem::current_path(error).string(), out)) {
    return absl::FailedPreconditionError(
        absl::StrCat(out, ": holds the working directory; --overwrite would delete it"));
  }
  return absl::OkStatus();
}

// Writes the checkpoint's manifest and blobs into a fresh folder, then puts it in place of `dir`.
absl::Status FetchCheckpointFolder(registry::RegistryClient& client, const v1::Checkpoint& checkpoint,
                                   const std::string& dir) {
  const std::string partial = PartialPathFor(dir);
  absl::Status status = MakeDirs(partial);
  if (status.ok()) status = WriteFileAtomic(JoinPath(partial, "manifest.json"), checkpoint.manifest_json());
  for (const v1::BlobRef& blob : checkpoint.blobs()) {
    if (status.ok()) {
      status = DownloadWithProgress(client, blob.sha256(), JoinPath(partial, blob.role()), JoinPath(dir, blob.role()),
                                    0, 0);
    }
  }
  if (status.ok()) status = ReplaceFolder(partial, dir);
  if (!status.ok()) {
    std::error_code ignored;
    std::filesystem::remove_all(partial, ignored);
  }
  return status;
}

absl::Status GetCheckpointInto(registry::RegistryClient& client, const v1::Checkpoint& checkpoint,
                               const RegistryFlags& f) {
  const std::string& dir = f.output;
  ROBOLOOP_RETURN_IF_ERROR(CheckGetOutput(dir, f.overwrite, /*checkpoint=*/true));
  ROBOLOOP_RETURN_IF_ERROR(FetchCheckpointFolder(client, checkpoint, dir));
  std::printf("fetched checkpoint %s:v%d into %s (%d blobs)\n", checkpoint.model().c_str(),
              checkpoint.version(), dir.c_str(), checkpoint.blobs_size());
  return absl::OkStatus();
}

// The error for `ref` once both lookups failed: any error but NotFound as it is; otherwise that of
// the kind that knows the name (a dataset's "has no version 9" rather than "unknown model"), or one
// error saying that neither kind has it.
absl::Status NeitherFound(registry::RegistryClient& client, const std::string& ref, const absl::Status& checkpoint,
                          const absl::Status& dataset) {
  if (!absl::IsNotFound(checkpoint)) return checkpoint;
  if (!absl::IsNotFound(dataset)) return dataset;
  absl::StatusOr<registry::ParsedReference> parsed = registry::ParseReference(ref);
  if (!parsed.ok()) return dataset;
  if (parsed->name.empty()) {
    return absl::NotFoundError(absl::StrCat("no checkpoint or dataset id starts with ", parsed->id_prefix));
  }
  if (client.GetDataset(parsed->name + "@latest").ok()) return dataset;
  if (client.GetCheckpoint(parsed->name + "@latest").ok()) return checkpoint;
  return absl::NotFoundError(absl::StrCat("unknown model or dataset '", parsed->name, "'"));
}

absl::Status Get(registry::RegistryClient& client, const RegistryFlags& f) {
  int64_t offset, length;
  ROBOLOOP_RETURN_IF_ERROR(ParseRange(f.range, &offset, &length));
  absl::StatusOr<v1::Dataset> dataset = client.GetDataset(f.ref);
  if (dataset.ok()) {
    ROBOLOOP_RETURN_IF_ERROR(CheckGetOutput(f.output, f.overwrite, /*checkpoint=*/false));
    ROBOLOOP_RETURN_IF_ERROR(
        DownloadWithProgress(client, dataset->blob().sha256(), f.output, f.output, offset, length));
    std::printf("fetched dataset %s:v%d into %s\n", dataset->name().c_str(), dataset->version(),
                f.output.c_str());
    return absl::OkStatus();
  }
  absl::StatusOr<v1::Checkpoint> checkpoint = client.GetCheckpoint(f.ref);
  if (!checkpoint.ok()) return NeitherFound(client, f.ref, checkpoint.status(), dataset.status());
  if (!f.range.empty()) return UsageError("--range applies to datasets only");
  return GetCheckpointInto(client, *checkpoint, f);
}

absl::StatusOr<int64_t> ParseSince(const std::string& since) {
  if (since.empty()) return 0;
  absl::Time time;
  std::string error;
  if (absl::ParseTime(absl::RFC3339_full, since, &time, &error) ||
      absl::ParseTime("%Y-%m-%d", since, &time, &error)) {
    return absl::ToUnixMicros(time);
  }
  return UsageError(absl::StrCat("--since '", since, "' is not YYYY-MM-DD or RFC 3339"));
}

// The filters of `ls` given, as its flags (" --model m --since 2026-01-01"; "" when none).
std::string GivenFilters(const RegistryFlags& f) {
  std::string given;
  for (const auto& [flag, value] : {std::pair<const char*, const std::string&>{"--model", f.model},
                                    {"--dataset", f.dataset_ref}, {"--alias", f.alias}, {"--since", f.since}}) {
    if (!value.empty()) absl::StrAppend(&given, " ", flag, " ", value);
  }
  return given;
}

// The line a table of no `what` (checkpoints, datasets) shows instead, as `leaderboard` does: that
// none is registered, or none matches the filters given.
std::string NoneMatch(const std::string& what, const std::string& filters) {
  return filters.empty() ? absl::StrCat("no ", what, " registered\n") : absl::StrCat("no ", what, " match", filters, "\n");
}

absl::Status PrintCheckpoints(const v1::ListCheckpointsResponse& response, Format format, const std::string& filters) {
  if (format == Format::kJson) {
    return PrintProtoJson(response);
  }
  if (response.checkpoints().empty()) {
    std::printf("%s", NoneMatch("checkpoints", filters).c_str());
    return absl::OkStatus();
  }
  Table table({"ID", "MODEL", "VERSION", "STEP", "ALIASES", "DATASET", "CREATED"});
  for (const v1::Checkpoint& c : response.checkpoints()) {
    table.AddRow({ShortId(c.id()), c.model(), absl::StrCat("v", c.version()), absl::StrCat(c.step()),
                  absl::StrJoin(c.aliases(), ","), ShortId(c.dataset_id()),
                  FormatTimeUtc(c.created_unix_us())});
  }
  std::printf("%s", table.Render().c_str());
  return absl::OkStatus();
}

absl::Status PrintDatasets(const v1::ListDatasetsResponse& response, Format format, const std::string& filters) {
  if (format == Format::kJson) {
    return PrintProtoJson(response);
  }
  if (response.datasets().empty()) {
    std::printf("%s", NoneMatch("datasets", filters).c_str());
    return absl::OkStatus();
  }
  Table table({"ID", "NAME", "VERSION", "BYTES", "PARENTS", "CREATED"});
  for (const v1::Dataset& d : response.datasets()) {
    std::vector<std::string> parents;
    for (const std::string& p : d.parent_ids()) parents.push_back(ShortId(p));
    table.AddRow({ShortId(d.id()), d.name(), absl::StrCat("v", d.version()),
                  absl::StrCat(d.blob().size()), absl::StrJoin(parents, ","),
                  FormatTimeUtc(d.created_unix_us())});
  }
  std::printf("%s", table.Render().c_str());
  return absl::OkStatus();
}

absl::Status List(registry::RegistryClient& client, const RegistryFlags& f) {
  ROBOLOOP_ASSIGN_OR_RETURN(int64_t since, ParseSince(f.since));
  if (f.order != "newest" && f.order != "oldest") {
    return UsageError(absl::StrCat("--order '", f.order, "' is not newest or oldest"));
  }
  if (f.limit < 1 || f.limit > registry::kMaxListLimit) {
    return UsageError(absl::StrCat("--limit ", f.limit, " is not in 1..", registry::kMaxListLimit));
  }
  v1::Order order = f.order == "newest" ? v1::ORDER_NEWEST_FIRST : v1::ORDER_OLDEST_FIRST;
  if (f.datasets && (!f.model.empty() || !f.dataset_ref.empty() || !f.alias.empty())) {
    return UsageError("--model, --dataset and --alias filter checkpoints; ls --datasets takes --since, --limit and "
                      "--order");
  }
  if (f.datasets) {
    v1::ListDatasetsRequest request;
    request.set_created_after_unix_us(since);
    request.set_limit(f.limit);
    request.set_order(order);
    ROBOLOOP_ASSIGN_OR_RETURN(v1::ListDatasetsResponse response, client.ListDatasets(request));
    return PrintDatasets(response, f.format, GivenFilters(f));
  }
  v1::ListCheckpointsRequest request;
  request.set_model(f.model);
  request.set_dataset_ref(f.dataset_ref);
  request.set_alias(f.alias);
  request.set_created_after_unix_us(since);
  request.set_limit(f.limit);
  request.set_order(order);
  ROBOLOOP_ASSIGN_OR_RETURN(v1::ListCheckpointsResponse response, client.ListCheckpoints(request));
  return PrintCheckpoints(response, f.format, GivenFilters(f));
}

absl::Status Show(registry::RegistryClient& client, const RegistryFlags& f) {
  absl::StatusOr<v1::Checkpoint> checkpoint = client.GetCheckpoint(f.ref);
  if (checkpoint.ok()) {
    return PrintProtoJson(*checkpoint);
  }
  absl::StatusOr<v1::Dataset> dataset = client.GetDataset(f.ref);
  if (dataset.ok()) {
    return PrintProtoJson(*dataset);
  }
  return NeitherFound(client, f.ref, checkpoint.status(), dataset.status());
}

absl::Status PrintAliasEvents(const std::vector<v1::AliasEvent>& events, Format format) {
  if (format == Format::kJson) {
    v1::AliasHistoryResponse response;
    for (const auto& e : events) *response.add_events() = e;
    return PrintProtoJson(response);
  }
  Table table({"TIME", "MODEL", "ALIAS", "TO", "FROM", "USER", "HOST", "REASON"});
  for (const v1::AliasEvent& e : events) {
    table.AddRow({FormatTimeUtc(e.time_unix_us()), e.model(), e.alias(), ShortId(e.checkpoint_id()),
                  ShortId(e.previous_id()), e.user(), e.host(), e.reason()});
  }
  std::printf("%s", table.Render().c_str());
  return absl::OkStatus();
}

absl::Status SetAlias(registry::RegistryClient& client, const RegistryFlags& f) {
  v1::SetAliasRequest request;
  request.set_model(f.model);
  request.set_alias(f.alias);
  request.set_ref(f.ref);
  request.set_reason(f.reason);
  ROBOLOOP_ASSIGN_OR_RETURN(v1::AliasEvent event, client.SetAlias(request));
  return PrintAliasEvents({event}, f.format);
}

absl::Status Promote(registry::RegistryClient& client, const RegistryFlags& f) {
  v1::PromoteRequest request;
  request.set_model(f.model);
  request.set_alias(f.alias);
  request.set_ref(f.ref);
  request.set_reason(f.reason);
  ROBOLOOP_ASSIGN_OR_RETURN(v1::AliasEvent event, client.Promote(request));
  return PrintAliasEvents({event}, f.format);
}

absl::Status History(registry::RegistryClient& client, const RegistryFlags& f) {
  v1::AliasHistoryRequest request;
  request.set_model(f.model);
  request.set_alias(f.alias);
  ROBOLOOP_ASSIGN_OR_RETURN(v1::AliasHistoryResponse response, client.AliasHistory(request));
  return PrintAliasEvents({response.events().begin(), response.events().end()}, f.format);
}

// A dataset's row in a lineage table: "dataset", or "dataset-set" for a set of files.
std::vector<std::string> DatasetRow(const std::string& relation, const v1::Dataset& d) {
  return {relation, train::IsDatasetSet(d) ? "dataset-set" : "dataset", ShortId(d.id()),
          absl::StrCat(d.name(), ":v", d.version())};
}

absl::Status Lineage(registry::RegistryClient& client, const RegistryFlags& f) {
  ROBOLOOP_ASSIGN_OR_RETURN(v1::LineageResponse response, client.Lineage(f.ref));
  if (f.format == Format::kJson) {
    return PrintProtoJson(response);
  }
  // Of a dataset, the lineage lists the dataset itself, the datasets it was made from and those made from it, and
  // the checkpoints trained on it or on those; of a checkpoint, the datasets it and its ancestors trained on (with
  // theirs).
  absl::StatusOr<v1::Dataset> self = client.GetDataset(f.ref);
  auto dataset_relation = [&self](const v1::Dataset& d) -> std::string {
    if (!self.ok()) return "dataset";
    return d.id() == self->id() ? "self" : "made-from";
  };
  auto trained_relation = [&self](const v1::Checkpoint& c) -> std::string {
    return self.ok() && c.dataset_id() != self->id() ? "trained-on-derived" : "trained-on";
  };
  Table table({"RELATION", "KIND", "ID", "NAME"});
  auto add_checkpoint = [&table](const std::string& relation, const v1::Checkpoint& c) {
    table.AddRow({relation, "checkpoint", ShortId(c.id()), absl::StrCat(c.model(), ":v", c.version())});
  };
  for (const v1::Checkpoint& c : response.ancestors()) add_checkpoint("ancestor", c);
  for (const v1::Checkpoint& c : response.descendants()) add_checkpoint("descendant", c);
  for (const v1::Checkpoint& c : response.trained_on_dataset()) add_checkpoint(trained_relation(c), c);
  for (const v1::Dataset& d : response.datasets()) table.AddRow(DatasetRow(dataset_relation(d), d));
  for (const v1::Dataset& d : response.derived_datasets()) table.AddRow(DatasetRow("made-into", d));
  std::printf("%s", table.Render().c_str());
  return absl::OkStatus();
}

absl::Status Verify(registry::RegistryClient& client, const RegistryFlags& f) {
  ROBOLOOP_ASSIGN_OR_RETURN(v1::VerifyResponse response, client.Verify(f.ref));
  for (const std::string& problem : response.problems()) std::printf("PROBLEM %s\n", problem.c_str());
  std::printf("verified %lld blobs: %d problems\n", static_cast<long long>(response.blobs_checked()),
              response.problems_size());
  if (response.problems_size() > 0) {
    return absl::DataLossError(absl::StrCat("registry verify found ", response.problems_size(),
                                            " problems"));
  }
  return absl::OkStatus();
}

// "300.0 MiB" / "12 B": a size for people.
std::string HumanBytes(int64_t bytes) {
  return bytes < (1 << 20) ? absl::StrCat(bytes, " B") : absl::StrFormat("%.1f MiB", bytes / 1048576.0);
}

absl::StatusOr<v1::GcRequest> GcRequestFrom(const RegistryFlags& f) {
  v1::GcRequest request;
  request.set_apply(f.apply);
  if (f.partial_max_age.empty()) return request;
  absl::Duration age;
  if (!absl::ParseDuration(f.partial_max_age, &age) || age < absl::ZeroDuration()) {
    return UsageError(absl::StrCat("--partial-max-age '", f.partial_max_age,
                                   "' is not a duration >= 0 such as 24h, 90m or 0s"));
  }
  request.set_partial_max_age_seconds(absl::ToInt64Seconds(age));
  return request;
}

void PrintPartials(const v1::GcResponse& response) {
  const std::string stale_verdict = response.applied() ? "deleted" : "would be deleted";
  for (const v1::PartialUploadInfo& partial : response.partials()) {
    std::printf("partial upload %s  %s  idle %s  %s\n", partial.sha256().c_str(),
                HumanBytes(partial.bytes_held()).c_str(),
                absl::FormatDuration(absl::Seconds(partial.idle_seconds())).c_str(),
                partial.stale() ? stale_verdict.c_str() : "kept (fresh, resumable)");
  }
}

absl::Status CollectGarbage(registry::RegistryClient& client, const RegistryFlags& f) {
  ROBOLOOP_ASSIGN_OR_RETURN(v1::GcRequest request, GcRequestFrom(f));
  ROBOLOOP_ASSIGN_OR_RETURN(v1::GcResponse response, client.CollectGarbage(request));
  for (const std::string& sha : response.unreferenced()) std::printf("%s\n", sha.c_str());
  PrintPartials(response);
  int stale = 0;
  for (const v1::PartialUploadInfo& partial : response.partials()) stale += partial.stale() ? 1 : 0;
  std::printf("%s %d unreferenced blobs and %d partial uploads idle over %s (%s); kept %d fresh partial uploads%s\n",
              response.applied() ? "deleted" : "found", response.unreferenced_size(), stale,
              absl::FormatDuration(absl::Seconds(response.partial_max_age_seconds())).c_str(),
              HumanBytes(response.bytes()).c_str(), response.partials_size() - stale,
              response.applied() ? "" : "; run with --apply to delete them");
  return absl::OkStatus();
}

using Action = absl::Status (*)(registry::RegistryClient&, const RegistryFlags&);

// Binds `action` to `command`: it opens the registry connection and runs the action on it.
void BindAction(CommandRunner& runner, CLI::App* command, std::shared_ptr<RegistryFlags> flags,
                Action action) {
  runner.Bind(command, [flags, action]() -> absl::Status {
    ROBOLOOP_ASSIGN_OR_RETURN(auto connection, wiring::RegistryConnection::Open(flags->target));
    return action(connection->client(), *flags);
  });
}

CLI::App* AddSubcommand(CLI::App* registry, const char* name, const char* help,
                        RegistryFlags* flags) {
  CLI::App* command = registry->add_subcommand(name, help);
  AddRegistryTargetFlags(command, &flags->target);
  return command;
}

}  // namespace

void AddRegistryCommands(CLI::App& app, CommandRunner& runner) {
  auto flags = std::make_shared<RegistryFlags>();
  RegistryFlags* f = flags.get();
  CLI::App* registry = app.add_subcommand("registry", "Checkpoints and datasets in the artifact registry");
  registry->require_subcommand(1);

  CLI::App* put = AddSubcommand(registry, "put", "Upload and register a dataset file or a checkpoint", f);
  put->add_option("FILE", f->file, "Dataset file (with --dataset)");
  // An empty name given on purpose is a bad value, not a missing flag.
  auto not_empty = [](const std::string& name) { return name.empty() ? std::string("empty name") : std::string(); };
  put->add_option("--dataset", f->dataset_name, "Register FILE as a dataset of this name")->check(not_empty);
  put->add_option("--model", f->model, "Register a checkpoint of this model")->check(not_empty);
  put->add_option("--policy-file", f->policy.policy_file,
                  "Policy file to register as a checkpoint (with --model and --task; the manifest is made for you)");
  put->add_option("--task", f->task, "Task the --policy-file runs on: its observation and action specs");
  put->add_option("--kind", f->policy.kind, "Policy kind of --policy-file (default: from its suffix)");
  put->add_option("--options", f->policy_options, "Policy options JSON of --policy-file (obs_dim/action_dim default to the task's)")
      ->capture_default_str();
  put->add_option("--normalization", f->policy.normalization_file,
                  "Normalization JSON {obs: {mean, std}, action: {mean, std}} of --policy-file (default: identity)");
  put->add_option("--task-plugin", f->task_plugins, "Shared library adding tasks (repeatable)");
  put->add_option("--task-yaml", f->yaml_tasks, "Declarative task YAML (repeatable)");
  AddPluginCallTimeoutFlag(put);
  put->add_option("--manifest", f->manifest, "Hand-written checkpoint manifest JSON (docs/manifest.md)");
  put->add_option("--blob", f->blobs, "ROLE=PATH blob of the checkpoint (repeatable)");
  put->add_option("--metadata", f->metadata, "Dataset metadata JSON")->capture_default_str();
  put->add_option("--parent", f->parents, "Parent dataset reference (repeatable)");
  BindAction(runner, put, flags, &Put);

  CLI::App* get = AddSubcommand(registry, "get", "Fetch a dataset file or a checkpoint folder", f);
  get->add_option("REF", f->ref, "Reference: id, id prefix, name:vN or name@alias")->required();
  get->add_option("-o,--output", f->output, "Destination file (dataset) or folder (checkpoint)")->required();
  get->add_option("--range", f->range, "OFFSET:LENGTH byte range of a dataset file");
  get->add_flag("--overwrite", f->overwrite,
                "Replace an existing file, or a folder an earlier `registry get` of a checkpoint wrote");
  BindAction(runner, get, flags, &Get);

  CLI::App* ls = AddSubcommand(registry, "ls", "List checkpoints (or datasets)", f);
  ls->add_flag("--datasets", f->datasets, "List datasets instead of checkpoints");
  ls->add_option("--model", f->model, "Only this model");
  ls->add_option("--dataset", f->dataset_ref, "Only checkpoints trained on this dataset");
  ls->add_option("--alias", f->alias, "Only checkpoints holding this alias");
  ls->add_option("--since", f->since, "Only artifacts created after (YYYY-MM-DD or RFC 3339)");
  ls->add_option("--limit", f->limit, "At most this many rows (1..100000)")->capture_default_str();
  ls->add_option("--order", f->order, "newest or oldest first")->capture_default_str();
  AddFormatOption(ls, &f->format);
  BindAction(runner, ls, flags, &List);

  CLI::App* show = AddSubcommand(registry, "show", "Show one checkpoint or dataset in full", f);
  show->add_option("REF", f->ref, "Reference")->required();
  BindAction(runner, show, flags, &Show);

  CLI::App* alias = AddSubcommand(registry, "alias", "Point MODEL@ALIAS at a checkpoint", f);
  alias->add_option("MODEL", f->model, "Model name")->required();
  alias->add_option("ALIAS", f->alias, "Alias name")->required();
  alias->add_option("REF", f->ref, "Checkpoint reference")->required();
  alias->add_option("--reason", f->reason, "Why the alias moves")->required();
  AddFormatOption(alias, &f->format);
  BindAction(runner, alias, flags, &SetAlias);

  CLI::App* promote = AddSubcommand(registry, "promote", "Promote a checkpoint to a protected alias", f);
  promote->add_option("MODEL", f->model, "Model name")->required();
  promote->add_option("REF", f->ref, "Checkpoint reference")->required();
  promote->add_option("--reason", f->reason, "Why it is promoted")->required();
  promote->add_option("--alias", f->alias, "Protected alias (default champion; an ordinary alias is refused)");
  AddFormatOption(promote, &f->format);
  BindAction(runner, promote, flags, &Promote);

  CLI::App* history = AddSubcommand(registry, "history", "Every move of a model's aliases", f);
  history->add_option("MODEL", f->model, "Model name")->required();
  history->add_option("--alias", f->alias, "Only this alias");
  AddFormatOption(history, &f->format);
  BindAction(runner, history, flags, &History);

  CLI::App* lineage = AddSubcommand(registry, "lineage", "Ancestors, descendants and datasets", f);
  lineage->add_option("REF", f->ref, "Checkpoint or dataset reference")->required();
  AddFormatOption(lineage, &f->format);
  BindAction(runner, lineage, flags, &Lineage);

  CLI::App* verify = AddSubcommand(registry, "verify", "Re-hash the blobs of one artifact or all", f);
  verify->add_option("REF", f->ref, "Artifact reference (default: everything)");
  BindAction(runner, verify, flags, &Verify);

  CLI::App* gc = AddSubcommand(registry, "gc",
                               "Find (or with --apply delete) unreferenced blobs and stale partial uploads", f);
  gc->add_flag("--apply", f->apply, "Delete them (default is a dry run)");
  gc->add_option("--partial-max-age", f->partial_max_age,
                 "Partial uploads idle longer than this (e.g. 24h, 90m, 0s) are deleted; younger ones stay "
                 "resumable (default: the registry's, 24h)");
  BindAction(runner, gc, flags, &CollectGarbage);
}

}  // namespace roboloop::cli
