#include "registry/registry.h"
#include "common/store_layout.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/fs.h"
#include "common/ids.h"
#include "common/sha256.h"
#include "common/status.h"
#include "registry/manifest.h"
#include "registry/names.h"
#include "registry/reference.h"

namespace roboloop::registry {
namespace {

// True when `alias` is one of the registry's protected aliases (moved only by Promote).
bool IsProtected(const std::vector<std::string>& protected_aliases, const std::string& alias) {
  return std::find(protected_aliases.begin(), protected_aliases.end(), alias) != protected_aliases.end();
}

v1::BlobInfo ToBlobInfo(const PutResult& result) {
  v1::BlobInfo info;
  info.set_sha256(result.sha256);
  info.set_size(result.size);
  info.set_already_present(result.already_present);
  return info;
}

// Returns the compact dump of `text` parsed as a JSON object ("{}" when empty); `field` names
// the input in errors.
absl::StatusOr<std::string> CanonicalJsonObject(const std::string& text, absl::string_view field) {
  if (text.empty()) return std::string("{}");
  nlohmann::json parsed;
  try {
    parsed = nlohmann::json::parse(text);
    if (!parsed.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(field, " must be a JSON object"));
    }
    return parsed.dump();
  } catch (const nlohmann::json::exception& error) {
    return absl::InvalidArgumentError(absl::StrCat(field, " is not valid JSON: ", error.what()));
  }
}

absl::StatusOr<int> CheckLimit(int limit) {
  if (limit == 0) return kDefaultListLimit;
  if (limit < 0 || limit > kMaxListLimit) {
    return absl::InvalidArgumentError(
        absl::StrCat("limit ", limit, " is out of range 0..", kMaxListLimit));
  }
  return limit;
}

// Prefixes the error of `value` (if any) with `context`.
template <typename T>
absl::StatusOr<T> WithContext(absl::StatusOr<T> value, const std::string& context) {
  if (value.ok()) return value;
  return Annotate(value.status(), context);
}

absl::Status CheckReason(const std::string& reason) {
  if (reason.empty()) return absl::InvalidArgumentError("a reason is required to move an alias");
  return absl::OkStatus();
}

}  // namespace

Registry::Registry(Options options, std::unique_ptr<BlobStore> blobs,
                   std::unique_ptr<Catalog> catalog)
    : options_(std::move(options)), blobs_(std::move(blobs)), catalog_(std::move(catalog)) {}

absl::StatusOr<std::unique_ptr<Registry>> Registry::Create(const Options& options) {
  if (options.root.empty()) return absl::InvalidArgumentError("registry root is empty");
  for (const std::string& alias : options.protected_aliases) {
    ROBOLOOP_RETURN_IF_ERROR(ValidateName("protected alias", alias));
  }
  ROBOLOOP_RETURN_IF_ERROR(Annotate(MakeDirs(options.root), "opening registry"));
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<BlobStore> blobs,
                            BlobStore::Create(BlobStore::Options{options.root}));
  Catalog::Options catalog_options;
  catalog_options.path = StoreLayout(options.root).RegistryCatalog();
  catalog_options.busy_timeout_ms = options.busy_timeout_ms;
  catalog_options.durable_commits = options.durable_commits;
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<Catalog> catalog, Catalog::Create(catalog_options));
  return std::unique_ptr<Registry>(new Registry(options, std::move(blobs), std::move(catalog)));
}

absl::StatusOr<v1::UploadStatusResponse> Registry::UploadStatus(
    const v1::UploadStatusRequest& request) {
  ROBOLOOP_RETURN_IF_ERROR(CheckSha256(request.sha256()));
  v1::UploadStatusResponse response;
  response.set_complete(blobs_->Contains(request.sha256()));
  ROBOLOOP_ASSIGN_OR_RETURN(int64_t held, blobs_->BytesHeld(request.sha256()));
  response.set_bytes_held(held);
  return response;
}

absl::Status Registry::AppendUpload(absl::string_view sha256, int64_t declared_size,
                                    int64_t offset, absl::string_view data) {
  return blobs_->Append(sha256, declared_size, offset, data);
}

absl::StatusOr<v1::BlobInfo> Registry::FinishUpload(absl::string_view sha256,
                                                    int64_t declared_size,
                                                    absl::string_view streamed_digest,
                                                    const Uploader& uploader) {
  std::optional<absl::MutexLock> quota_lock;
  if (uploader.quota_bytes > 0) {
    quota_lock.emplace(&quota_mu_);
    absl::Status within_quota = CheckStorageQuota(uploader, sha256, declared_size);
    if (!within_quota.ok()) {
      ROBOLOOP_RETURN_IF_ERROR(blobs_->Abort(sha256));
      return within_quota;
    }
  }
  ROBOLOOP_ASSIGN_OR_RETURN(PutResult result,
                            blobs_->Finish(sha256, declared_size, streamed_digest));
  if (result.size != declared_size) {
    return absl::FailedPreconditionError(absl::StrCat("blob ", sha256, " is stored with ",
                                                      result.size, " bytes, not the declared ",
                                                      declared_size));
  }
  if (!result.already_present) {
    ROBOLOOP_RETURN_IF_ERROR(catalog_->RecordBlobUpload(result.sha256, uploader.caller, result.size));
  }
  return ToBlobInfo(result);
}

absl::Status Registry::CheckStorageQuota(const Uploader& uploader, absl::string_view sha256,
                                         int64_t size) {
  if (uploader.quota_bytes <= 0 || blobs_->Contains(sha256)) return absl::OkStatus();
  ROBOLOOP_ASSIGN_OR_RETURN(int64_t stored, BytesStoredBy(uploader.caller));
  if (stored + size <= uploader.quota_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "caller '", uploader.caller, "' is over its storage quota of ", uploader.quota_bytes,
      " bytes (--storage-quota): it has stored ", stored, " bytes and blob ", sha256, " adds ", size));
}

absl::StatusOr<int64_t> Registry::BytesStoredBy(const std::string& caller) {
  return catalog_->BytesUploadedBy(caller);
}

absl::Status Registry::AbortUpload(absl::string_view sha256) { return blobs_->Abort(sha256); }

absl::StatusOr<v1::BlobInfo> Registry::PutBlob(absl::string_view data) {
  ROBOLOOP_ASSIGN_OR_RETURN(PutResult result, blobs_->Put(data));
  return ToBlobInfo(result);
}

absl::StatusOr<v1::BlobInfo> Registry::PutBlobFile(const std::string& path) {
  ROBOLOOP_ASSIGN_OR_RETURN(PutResult result, blobs_->PutFile(path));
  return ToBlobInfo(result);
}

absl::StatusOr<std::unique_ptr<BlobReader>> Registry::OpenBlob(const v1::DownloadRequest& request) {
  if (request.chunk_size() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("chunk_size ", request.chunk_size(), " < 0"));
  }
  return blobs_->OpenReader(request.sha256(), request.offset(), request.length());
}

absl::StatusOr<std::string> Registry::ReadBlob(absl::string_view sha256) {
  return blobs_->ReadAll(sha256);
}

absl::Status Registry::CheckBlobsStored(const std::vector<v1::BlobRef>& blobs) {
  for (const v1::BlobRef& blob : blobs) {
    absl::StatusOr<BlobStat> stat = blobs_->Stat(blob.sha256());
    if (absl::IsNotFound(stat.status())) {
      return absl::FailedPreconditionError(absl::StrCat(
          "blob '", blob.role(), "' (", blob.sha256(), ") is not uploaded; upload it first"));
    }
    ROBOLOOP_RETURN_IF_ERROR(stat.status());
    if (stat->size != blob.size()) {
      return absl::FailedPreconditionError(absl::StrCat("blob '", blob.role(), "' (", blob.sha256(),
                                                        ") has ", stat->size,
                                                        " bytes but the manifest says ",
                                                        blob.size()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Checkpoint> Registry::RegisterCheckpoint(
    const v1::RegisterCheckpointRequest& request, const Actor& actor) {
  ROBOLOOP_ASSIGN_OR_RETURN(Manifest manifest, ParseManifest(request.manifest_json()));
  if (!request.model().empty() && request.model() != manifest.model) {
    return absl::InvalidArgumentError(absl::StrCat("request model '", request.model(),
                                                   "' differs from the manifest's model '",
                                                   manifest.model, "'"));
  }
  absl::StatusOr<v1::Checkpoint> existing = catalog_->GetCheckpoint(manifest.id);
  if (existing.ok() || !absl::IsNotFound(existing.status())) return existing;
  if (!request.run_id().empty()) {
    ROBOLOOP_RETURN_IF_ERROR(ValidateName("run id", request.run_id()));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(std::string config, CanonicalJsonObject(request.config_json(), "config_json"));
  if (!manifest.dataset_id.empty()) {
    ROBOLOOP_RETURN_IF_ERROR(Annotate(catalog_->GetDataset(manifest.dataset_id).status(),
                                      "manifest dataset_id"));
  }
  if (!manifest.parent_id.empty()) {
    ROBOLOOP_RETURN_IF_ERROR(Annotate(catalog_->GetCheckpoint(manifest.parent_id).status(),
                                      "manifest parent_id"));
  }
  ROBOLOOP_RETURN_IF_ERROR(CheckBlobsStored(manifest.blobs));
  CheckpointRecord record;
  record.id = manifest.id;
  record.model = manifest.model;
  record.step = manifest.step;
  record.run_id = request.run_id();
  record.dataset_id = manifest.dataset_id;
  record.parent_id = manifest.parent_id;
  record.config_json = std::move(config);
  record.metrics_json = manifest.metrics_json;
  record.manifest_json = manifest.canonical;
  record.blobs = manifest.blobs;
  ROBOLOOP_ASSIGN_OR_RETURN(Inserted<v1::Checkpoint> inserted,
                            catalog_->InsertCheckpoint(record, actor));
  return std::move(inserted.value);
}

absl::StatusOr<v1::Dataset> Registry::RegisterDataset(const v1::RegisterDatasetRequest& request) {
  ROBOLOOP_RETURN_IF_ERROR(ValidateName("dataset", request.name()));
  ROBOLOOP_RETURN_IF_ERROR(CheckSha256(request.blob_sha256(), "blob_sha256"));
  absl::StatusOr<BlobStat> stat = blobs_->Stat(request.blob_sha256());
  if (absl::IsNotFound(stat.status())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "dataset blob ", request.blob_sha256(), " is not uploaded; upload it first"));
  }
  ROBOLOOP_RETURN_IF_ERROR(stat.status());
  ROBOLOOP_ASSIGN_OR_RETURN(std::string metadata,
                            CanonicalJsonObject(request.metadata_json(), "metadata_json"));
  DatasetRecord record;
  record.name = request.name();
  record.blob.set_role("data");
  record.blob.set_sha256(request.blob_sha256());
  record.blob.set_size(stat->size);
  record.metadata_json = std::move(metadata);
  std::set<std::string> parents;
  for (const std::string& ref : request.parent_refs()) {
    ROBOLOOP_ASSIGN_OR_RETURN(std::string parent,
                              WithContext(ResolveDatasetRef(*catalog_, ref), "parent dataset"));
    if (parent == request.blob_sha256()) {
      return absl::InvalidArgumentError(
          absl::StrCat("parent dataset '", ref, "' is the dataset being registered"));
    }
    parents.insert(parent);
  }
  record.parent_ids.assign(parents.begin(), parents.end());
  ROBOLOOP_ASSIGN_OR_RETURN(Inserted<v1::Dataset> inserted, catalog_->InsertDataset(record));
  return std::move(inserted.value);
}

absl::StatusOr<v1::Checkpoint> Registry::GetCheckpoint(const v1::GetRequest& request) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::string id, ResolveCheckpointRef(*catalog_, request.ref()));
  return catalog_->GetCheckpoint(id);
}

absl::StatusOr<v1::Dataset> Registry::GetDataset(const v1::GetRequest& request) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::string id, ResolveDatasetRef(*catalog_, request.ref()));
  return catalog_->GetDataset(id);
}

absl::StatusOr<v1::ListCheckpointsResponse> Registry::ListCheckpoints(
    const v1::ListCheckpointsRequest& request) {
  CheckpointFilter filter;
  if (!request.model().empty()) {
    ROBOLOOP_RETURN_IF_ERROR(ValidateName("model", request.model()));
    filter.model = request.model();
  }
  if (!request.alias().empty()) {
    ROBOLOOP_RETURN_IF_ERROR(ValidateName("alias", request.alias()));
    filter.alias = request.alias();
  }
  if (!request.dataset_ref().empty()) {
    ROBOLOOP_ASSIGN_OR_RETURN(filter.dataset_id,
                              WithContext(ResolveDatasetRef(*catalog_, request.dataset_ref()),
                                          "dataset filter"));
  }
  filter.created_after_unix_us = request.created_after_unix_us();
  ROBOLOOP_ASSIGN_OR_RETURN(filter.limit, CheckLimit(request.limit()));
  filter.newest_first = request.order() == v1::ORDER_NEWEST_FIRST;
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<v1::Checkpoint> checkpoints,
                            catalog_->ListCheckpoints(filter));
  v1::ListCheckpointsResponse response;
  for (v1::Checkpoint& checkpoint : checkpoints) *response.add_checkpoints() = std::move(checkpoint);
  return response;
}

absl::StatusOr<v1::ListDatasetsResponse> Registry::ListDatasets(
    const v1::ListDatasetsRequest& request) {
  DatasetFilter filter;
  if (!request.name().empty()) {
    ROBOLOOP_RETURN_IF_ERROR(ValidateName("dataset", request.name()));
    filter.name = request.name();
  }
  filter.created_after_unix_us = request.created_after_unix_us();
  ROBOLOOP_ASSIGN_OR_RETURN(filter.limit, CheckLimit(request.limit()));
  filter.newest_first = request.order() == v1::ORDER_NEWEST_FIRST;
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<v1::Dataset> datasets, catalog_->ListDatasets(filter));
  v1::ListDatasetsResponse response;
  for (v1::Dataset& dataset : datasets) *response.add_datasets() = std::move(dataset);
  return response;
}

absl::Status Registry::CheckModelKnown(const std::string& model) {
  ROBOLOOP_RETURN_IF_ERROR(ValidateName("model", model));
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::string> models, catalog_->ModelNames());
  if (std::find(models.begin(), models.end(), model) != models.end()) return absl::OkStatus();
  return absl::NotFoundError(
      absl::StrCat("unknown model '", model, "'", CloseMatchesSuffix(model, models)));
}

absl::StatusOr<v1::AliasEvent> Registry::MoveAlias(const std::string& model,
                                                   const std::string& alias,
                                                   const std::string& ref,
                                                   const std::string& reason, const Actor& actor) {
  ROBOLOOP_RETURN_IF_ERROR(CheckModelKnown(model));
  ROBOLOOP_RETURN_IF_ERROR(ValidateName("alias", alias));
  if (alias == kLatestAlias) {
    return absl::FailedPreconditionError(
        "alias 'latest' is maintained automatically by each registration");
  }
  ROBOLOOP_RETURN_IF_ERROR(CheckReason(reason));
  ROBOLOOP_ASSIGN_OR_RETURN(std::string id, ResolveCheckpointRef(*catalog_, ref));
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Checkpoint checkpoint, catalog_->GetCheckpoint(id));
  if (checkpoint.model() != model) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint ", ref, " belongs to model '",
                                                   checkpoint.model(), "', not '", model, "'"));
  }
  return catalog_->MoveAlias(model, alias, id, reason, actor);
}

absl::StatusOr<v1::AliasEvent> Registry::SetAlias(const v1::SetAliasRequest& request,
                                                  const Actor& actor) {
  if (IsProtected(options_.protected_aliases, request.alias())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "alias '", request.alias(), "' is protected: move it with an explicit promote"));
  }
  return MoveAlias(request.model(), request.alias(), request.ref(), request.reason(), actor);
}

absl::StatusOr<v1::AliasEvent> Registry::Promote(const v1::PromoteRequest& request,
                                                 const Actor& actor) {
  std::string alias = request.alias().empty() ? kChampionAlias : request.alias();
  if (!IsProtected(options_.protected_aliases, alias)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "promote moves only a protected alias (", absl::StrJoin(options_.protected_aliases, ", "), "), not '", alias,
        "'; move an ordinary alias with `registry alias`"));
  }
  return MoveAlias(request.model(), alias, request.ref(), request.reason(), actor);
}

absl::StatusOr<v1::AliasHistoryResponse> Registry::AliasHistory(
    const v1::AliasHistoryRequest& request) {
  ROBOLOOP_RETURN_IF_ERROR(CheckModelKnown(request.model()));
  if (!request.alias().empty()) ROBOLOOP_RETURN_IF_ERROR(ValidateName("alias", request.alias()));
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<v1::AliasEvent> events,
                            catalog_->AliasHistory(request.model(), request.alias()));
  v1::AliasHistoryResponse response;
  for (v1::AliasEvent& event : events) *response.add_events() = std::move(event);
  return response;
}

absl::StatusOr<v1::LineageResponse> Registry::Lineage(const v1::LineageRequest& request) {
  ROBOLOOP_ASSIGN_OR_RETURN(ResolvedArtifact artifact, ResolveArtifactRef(*catalog_, request.ref()));
  v1::LineageResponse response;
  std::vector<std::string> dataset_roots;
  if (artifact.kind == ArtifactKind::kDataset) {
    ROBOLOOP_ASSIGN_OR_RETURN(std::vector<v1::Dataset> derived, catalog_->DerivedDatasets(artifact.id));
    std::vector<std::string> trained_on = {artifact.id};
    for (v1::Dataset& dataset : derived) {
      trained_on.push_back(dataset.id());
      *response.add_derived_datasets() = std::move(dataset);
    }
    for (const std::string& dataset_id : trained_on) {
      ROBOLOOP_ASSIGN_OR_RETURN(std::vector<v1::Checkpoint> trained, catalog_->CheckpointsTrainedOn(dataset_id));
      for (v1::Checkpoint& checkpoint : trained) *response.add_trained_on_dataset() = std::move(checkpoint);
    }
    dataset_roots.push_back(artifact.id);
  } else {
    ROBOLOOP_ASSIGN_OR_RETURN(v1::Checkpoint self, catalog_->GetCheckpoint(artifact.id));
    ROBOLOOP_ASSIGN_OR_RETURN(std::vector<v1::Checkpoint> ancestors,
                              catalog_->Ancestors(artifact.id));
    ROBOLOOP_ASSIGN_OR_RETURN(std::vector<v1::Checkpoint> descendants,
                              catalog_->Descendants(artifact.id));
    if (!self.dataset_id().empty()) dataset_roots.push_back(self.dataset_id());
    for (v1::Checkpoint& checkpoint : ancestors) {
      if (!checkpoint.dataset_id().empty()) dataset_roots.push_back(checkpoint.dataset_id());
      *response.add_ancestors() = std::move(checkpoint);
    }
    for (v1::Checkpoint& checkpoint : descendants) *response.add_descendants() = std::move(checkpoint);
  }
  std::set<std::string> seen;
  for (const std::string& root : dataset_roots) {
    ROBOLOOP_ASSIGN_OR_RETURN(std::vector<v1::Dataset> datasets, catalog_->DatasetAncestry(root));
    for (v1::Dataset& dataset : datasets) {
      if (seen.insert(dataset.id()).second) *response.add_datasets() = std::move(dataset);
    }
  }
  return response;
}

void Registry::VerifyBlobRef(const v1::BlobRef& blob, absl::string_view owner, bool rehash,
                             v1::VerifyResponse* out) {
  absl::StatusOr<BlobStat> stat = blobs_->Stat(blob.sha256());
  if (!stat.ok()) {
    out->add_problems(absl::StrCat(owner, ": blob '", blob.role(), "' ", blob.sha256(),
                                   " is missing (", stat.status().message(), ")"));
    return;
  }
  if (stat->size != blob.size()) {
    out->add_problems(absl::StrCat(owner, ": blob '", blob.role(), "' ", blob.sha256(), " has ",
                                   stat->size, " bytes, the catalog says ", blob.size()));
  }
  if (!rehash) return;
  out->set_blobs_checked(out->blobs_checked() + 1);
  absl::Status verified = blobs_->Verify(blob.sha256());
  if (!verified.ok()) out->add_problems(absl::StrCat(owner, ": ", verified.message()));
}

void Registry::VerifyCheckpoint(const v1::Checkpoint& checkpoint, bool rehash,
                                v1::VerifyResponse* out) {
  std::string owner = absl::StrCat("checkpoint ", checkpoint.model(), ":v", checkpoint.version(),
                                   " (", checkpoint.id(), ")");
  if (Sha256Hex(checkpoint.manifest_json()) != checkpoint.id()) {
    out->add_problems(absl::StrCat(owner, ": stored manifest does not hash to its id"));
  }
  for (const v1::BlobRef& blob : checkpoint.blobs()) VerifyBlobRef(blob, owner, rehash, out);
}

void Registry::VerifyDataset(const v1::Dataset& dataset, bool rehash, v1::VerifyResponse* out) {
  std::string owner =
      absl::StrCat("dataset ", dataset.name(), ":v", dataset.version(), " (", dataset.id(), ")");
  VerifyBlobRef(dataset.blob(), owner, rehash, out);
}

absl::StatusOr<v1::VerifyResponse> Registry::VerifyAll() {
  v1::VerifyResponse response;
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<BlobStat> stored, blobs_->List());
  for (const BlobStat& blob : stored) {
    response.set_blobs_checked(response.blobs_checked() + 1);
    absl::Status verified = blobs_->Verify(blob.sha256);
    if (!verified.ok()) response.add_problems(std::string(verified.message()));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::string> checkpoint_ids, catalog_->AllCheckpointIds());
  for (const std::string& id : checkpoint_ids) {
    ROBOLOOP_ASSIGN_OR_RETURN(v1::Checkpoint checkpoint, catalog_->GetCheckpoint(id));
    VerifyCheckpoint(checkpoint, /*rehash=*/false, &response);
  }
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::string> dataset_ids, catalog_->AllDatasetIds());
  for (const std::string& id : dataset_ids) {
    ROBOLOOP_ASSIGN_OR_RETURN(v1::Dataset dataset, catalog_->GetDataset(id));
    VerifyDataset(dataset, /*rehash=*/false, &response);
  }
  return response;
}

absl::StatusOr<v1::VerifyResponse> Registry::Verify(const v1::VerifyRequest& request) {
  if (request.ref().empty()) return VerifyAll();
  ROBOLOOP_ASSIGN_OR_RETURN(ResolvedArtifact artifact, ResolveArtifactRef(*catalog_, request.ref()));
  v1::VerifyResponse response;
  if (artifact.kind == ArtifactKind::kCheckpoint) {
    ROBOLOOP_ASSIGN_OR_RETURN(v1::Checkpoint checkpoint, catalog_->GetCheckpoint(artifact.id));
    VerifyCheckpoint(checkpoint, /*rehash=*/true, &response);
  } else {
    ROBOLOOP_ASSIGN_OR_RETURN(v1::Dataset dataset, catalog_->GetDataset(artifact.id));
    VerifyDataset(dataset, /*rehash=*/true, &response);
  }
  return response;
}

absl::StatusOr<v1::GcResponse> Registry::CollectGarbage(const v1::GcRequest& request) {
  if (request.has_partial_max_age_seconds() && request.partial_max_age_seconds() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("gc: partial_max_age_seconds must be >= 0, got ",
                                                   request.partial_max_age_seconds()));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<v1::BlobRef> referenced_list, catalog_->ReferencedBlobs());
  std::set<std::string> referenced;
  for (const v1::BlobRef& blob : referenced_list) referenced.insert(blob.sha256());
  int64_t now = NowUnixMicros();
  int64_t blob_cutoff = now - absl::ToInt64Microseconds(options_.gc_grace);

  v1::GcResponse response;
  response.set_applied(request.apply());
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<BlobStat> stored, blobs_->List());
  for (const BlobStat& blob : stored) {
    if (referenced.count(blob.sha256) > 0 || blob.mtime_unix_us > blob_cutoff) continue;
    if (request.apply()) {
      // Re-check just before removing: a registration may have referenced it meanwhile.
      ROBOLOOP_ASSIGN_OR_RETURN(bool now_referenced, catalog_->IsBlobReferenced(blob.sha256));
      if (now_referenced) continue;
      ROBOLOOP_RETURN_IF_ERROR(blobs_->Remove(blob.sha256));
      ROBOLOOP_RETURN_IF_ERROR(catalog_->ForgetBlobUpload(blob.sha256));
    }
    response.add_unreferenced(blob.sha256);
    response.set_bytes(response.bytes() + blob.size);
  }
  response.set_partial_max_age_seconds(request.has_partial_max_age_seconds()
                                           ? request.partial_max_age_seconds()
                                           : absl::ToInt64Seconds(options_.stale_partial_age));
  ROBOLOOP_RETURN_IF_ERROR(CollectPartials(now, request.apply(), &response));
  return response;
}

absl::Status Registry::CollectPartials(int64_t now_unix_us, bool apply, v1::GcResponse* response) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<PartialUpload> partials, blobs_->ListPartials());
  std::sort(partials.begin(), partials.end(),
            [](const PartialUpload& a, const PartialUpload& b) { return a.mtime_unix_us < b.mtime_unix_us; });
  for (const PartialUpload& partial : partials) {
    v1::PartialUploadInfo* info = response->add_partials();
    info->set_sha256(partial.sha256);
    info->set_bytes_held(partial.bytes_held);
    info->set_idle_seconds(std::max<int64_t>(0, (now_unix_us - partial.mtime_unix_us) / 1000000));
    info->set_stale(absl::Microseconds(now_unix_us - partial.mtime_unix_us) >
                    absl::Seconds(response->partial_max_age_seconds()));
    if (!info->stale()) continue;
    if (apply) ROBOLOOP_RETURN_IF_ERROR(blobs_->Abort(partial.sha256));
    response->set_bytes(response->bytes() + partial.bytes_held);
  }
  return absl::OkStatus();
}

}  // namespace roboloop::registry
