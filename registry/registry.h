// The artifact registry's transport-free handler: the single logic layer that the gRPC
// RegistryService adapter and the embedded CLI both call. Methods mirror the RPCs of
// proto/roboloop/v1/registry.proto; inputs are validated here, at the boundary, and bad input
// returns a Status naming the input (never a crash, never a loss of stored data).
//
// Layout under Options::root: blobs/ab/cd/<sha256>, partial/<sha256> (resumable uploads),
// tmp/ (writes in flight), catalog.db (SQLite, WAL).
//
// Thread-safety: all methods may be called concurrently from any thread. Several processes may
// share one root: the catalog serializes writers with SQLite transactions, and blob writes are
// atomic renames of fsynced files.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "registry/blob_store.h"
#include "registry/catalog.h"
#include "roboloop/v1/registry.pb.h"

namespace roboloop::registry {

// Default size of download chunks.
inline constexpr int64_t kDefaultChunkSize = 1 << 20;
// Default and maximum `limit` of list calls.
inline constexpr int kDefaultListLimit = 100;
inline constexpr int kMaxListLimit = 100000;
// The alias Promote moves when none is given.
inline constexpr char kChampionAlias[] = "champion";
// The alias every registration moves.
inline constexpr char kLatestAlias[] = "latest";

// Who stores a blob, for the per-caller storage quota: the caller's name and the bytes of blobs it
// may have stored (0 = no quota).
struct Uploader {
  std::string caller;
  int64_t quota_bytes = 0;
};

class Registry {
 public:
  struct Options {
    std::string root;  // store directory (created when missing)
    std::vector<std::string> protected_aliases = {kChampionAlias};  // moved only by Promote
    absl::Duration gc_grace = absl::Minutes(15);  // GC spares blobs younger than this (uploads awaiting registration)
    absl::Duration stale_partial_age = absl::Hours(24);  // GC removes partial uploads idle longer (default of GcRequest)
    bool durable_commits = true;   // catalog commits survive power loss (synchronous=FULL)
    int busy_timeout_ms = 30000;   // how long a writer waits for another process's catalog lock
  };

  // Opens (creating) the registry at options.root: cleans dead writers' temp files and
  // migrates the catalog.
  static absl::StatusOr<std::unique_ptr<Registry>> Create(const Options& options);

  // --- Blobs ---------------------------------------------------------------------------------
  // How many bytes of `sha256` a partial upload holds, and whether the blob is complete.
  absl::StatusOr<v1::UploadStatusResponse> UploadStatus(const v1::UploadStatusRequest& request);
  // Appends `data` at `offset` to the upload of `sha256` declared as `declared_size` bytes.
  // `offset` must equal the bytes held (FailedPrecondition); bytes past `declared_size` are
  // refused (OutOfRange); AlreadyExists when the blob is complete already.
  absl::Status AppendUpload(absl::string_view sha256, int64_t declared_size, int64_t offset,
                            absl::string_view data);
  // Checks size (truncated: FailedPrecondition, kept for resuming) and hash (DataLoss,
  // discarded) and makes the blob visible, recorded as stored by `uploader.caller` unless it was
  // stored before. Completing an already stored blob is OK. When the new blob would take the
  // caller over its quota, the upload is discarded and ResourceExhausted returned (see
  // CheckStorageQuota). `streamed_digest`: see BlobStore::Finish.
  absl::StatusOr<v1::BlobInfo> FinishUpload(absl::string_view sha256, int64_t declared_size,
                                            absl::string_view streamed_digest = "",
                                            const Uploader& uploader = {});
  // OK when the blob is stored already, `uploader` has no quota, or the bytes it has stored plus
  // `size` stay within its quota; ResourceExhausted naming the quota, its value, the caller and
  // its usage otherwise.
  absl::Status CheckStorageQuota(const Uploader& uploader, absl::string_view sha256, int64_t size);
  // Bytes of the blobs `caller` stored first (deduplicated content counts for its first uploader
  // only) and that are still stored.
  absl::StatusOr<int64_t> BytesStoredBy(const std::string& caller);
  // Discards a partial upload; OK when there is none.
  absl::Status AbortUpload(absl::string_view sha256);
  // Stores `data` in one call (embedded use).
  absl::StatusOr<v1::BlobInfo> PutBlob(absl::string_view data);
  // Stores the file at `path` (streamed; embedded use).
  absl::StatusOr<v1::BlobInfo> PutBlobFile(const std::string& path);
  // Opens the byte range of `request` (length 0: to the end). Reading a whole blob verifies its
  // hash before the last chunk is returned; a partial range is served after a full verify.
  // chunk_size is the caller's business (kDefaultChunkSize when 0).
  absl::StatusOr<std::unique_ptr<BlobReader>> OpenBlob(const v1::DownloadRequest& request);
  // Returns a whole verified blob (small blobs).
  absl::StatusOr<std::string> ReadBlob(absl::string_view sha256);

  // --- Artifacts -----------------------------------------------------------------------------
  // Validates the manifest, checks that every blob it names is stored with the stated size, and
  // registers it as the next version of its model (moving `latest`). An identical manifest
  // registered again returns the existing checkpoint unchanged.
  absl::StatusOr<v1::Checkpoint> RegisterCheckpoint(const v1::RegisterCheckpointRequest& request,
                                                    const Actor& actor = Actor::Local());
  // Registers a stored blob as the next version of dataset `name`, with parents by reference.
  // The same content under the same name returns the existing dataset.
  absl::StatusOr<v1::Dataset> RegisterDataset(const v1::RegisterDatasetRequest& request);
  // Returns the checkpoint a reference names.
  absl::StatusOr<v1::Checkpoint> GetCheckpoint(const v1::GetRequest& request);
  // Returns the dataset a reference names.
  absl::StatusOr<v1::Dataset> GetDataset(const v1::GetRequest& request);
  // Lists checkpoints (filters: model, dataset_ref, alias, created_after; limit 0 = 100).
  absl::StatusOr<v1::ListCheckpointsResponse> ListCheckpoints(
      const v1::ListCheckpointsRequest& request);
  // Lists datasets (filters: name, created_after; limit 0 = 100).
  absl::StatusOr<v1::ListDatasetsResponse> ListDatasets(const v1::ListDatasetsRequest& request);

  // --- Aliases and lineage -------------------------------------------------------------------
  // Points model@alias at a checkpoint of that model; a reason is required. `latest` and the
  // protected aliases are refused (FailedPrecondition).
  absl::StatusOr<v1::AliasEvent> SetAlias(const v1::SetAliasRequest& request,
                                          const Actor& actor = Actor::Local());
  // Moves a protected alias (default `champion`); a reason is required. InvalidArgument for an
  // alias that is not protected (those move through SetAlias).
  absl::StatusOr<v1::AliasEvent> Promote(const v1::PromoteRequest& request,
                                         const Actor& actor = Actor::Local());
  // Every move of a model's aliases (one alias when given), oldest first.
  absl::StatusOr<v1::AliasHistoryResponse> AliasHistory(const v1::AliasHistoryRequest& request);
  // Ancestors, descendants and datasets of a checkpoint, or a dataset's parents, the datasets
  // made from it and the checkpoints trained on it or on those.
  absl::StatusOr<v1::LineageResponse> Lineage(const v1::LineageRequest& request);

  // --- Maintenance ---------------------------------------------------------------------------
  // Re-hashes blobs and checks references: everything (empty ref) or one artifact. Problems are
  // listed in the response; the Status is an error only when the check itself could not run.
  absl::StatusOr<v1::VerifyResponse> Verify(const v1::VerifyRequest& request);
  // Lists (dry run) or removes (apply) blobs no checkpoint or dataset references and older than
  // gc_grace, and partial uploads idle longer than request.partial_max_age_seconds (unset:
  // stale_partial_age). Every partial upload is listed with its size, idle time and whether it
  // is stale; fresh ones are kept and stay resumable. InvalidArgument for a negative max age.
  absl::StatusOr<v1::GcResponse> CollectGarbage(const v1::GcRequest& request);

  // The blob store (read-mostly access for tools and tests).
  BlobStore& blobs() { return *blobs_; }
  // The catalog.
  Catalog& catalog() { return *catalog_; }

 private:
  Registry(Options options, std::unique_ptr<BlobStore> blobs, std::unique_ptr<Catalog> catalog);
  absl::Status CheckBlobsStored(const std::vector<v1::BlobRef>& blobs);
  // Lists every partial upload into `response` (its partial_max_age_seconds set) and, with
  // `apply`, deletes the stale ones; their bytes are added to response->bytes().
  absl::Status CollectPartials(int64_t now_unix_us, bool apply, v1::GcResponse* response);
  absl::StatusOr<v1::AliasEvent> MoveAlias(const std::string& model, const std::string& alias,
                                           const std::string& ref, const std::string& reason,
                                           const Actor& actor);
  absl::Status CheckModelKnown(const std::string& model);
  void VerifyCheckpoint(const v1::Checkpoint& checkpoint, bool rehash, v1::VerifyResponse* out);
  void VerifyDataset(const v1::Dataset& dataset, bool rehash, v1::VerifyResponse* out);
  void VerifyBlobRef(const v1::BlobRef& blob, absl::string_view owner, bool rehash,
                     v1::VerifyResponse* out);
  absl::StatusOr<v1::VerifyResponse> VerifyAll();

  const Options options_;
  const std::unique_ptr<BlobStore> blobs_;
  const std::unique_ptr<Catalog> catalog_;
  // Held by uploads under a quota from the quota check to the upload's record, so concurrent
  // uploads of one caller cannot together pass its quota (within this process).
  absl::Mutex quota_mu_;
};

}  // namespace roboloop::registry
