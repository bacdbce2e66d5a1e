// Client of RegistryService used by the CLI and by every later stage. Uploads are resumable
// and verified; downloads are verified before they appear under their final name.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/grpc_client.h"
#include "roboloop/v1/registry.grpc.pb.h"

namespace roboloop::registry {

// Tuning of a RegistryClient.
struct RegistryClientOptions {
  int64_t chunk_bytes = 1 << 20;                       // upload/download chunk size
  absl::Duration transfer_deadline = absl::Hours(1);  // deadline of one upload or download
};

// Thread-safe: calls may run concurrently on one client (gRPC stubs are thread-safe).
class RegistryClient {
 public:
  // Called with (bytes done, bytes total) while a transfer runs: for an upload, of the whole file (a resumed one
  // starts at the bytes the server held); for a download, of the range it fetches.
  using ProgressFn = std::function<void(int64_t, int64_t)>;
  using Options = RegistryClientOptions;

  // A client over `channel` (token, TLS and unary deadlines come from the channel).
  RegistryClient(std::shared_ptr<const common::GrpcChannel> channel, Options options);

  // Connects to the registry described by `channel_options`.
  static absl::StatusOr<std::unique_ptr<RegistryClient>> Connect(
      const common::GrpcChannelOptions& channel_options, Options options = Options());

  // Uploads the file at `path` (hashing it first), resuming a partial upload the server
  // holds. Returns the stored blob; `already_present` when the server had it.
  absl::StatusOr<v1::BlobInfo> UploadFile(const std::string& path, ProgressFn progress = {});

  // Downloads blob `sha256` into `path`, written to a temporary name unique to the call
  // (<path>.partial-<uuid>), verified against its hash and then renamed. `offset`/`length`
  // select a byte range (length 0 = to the end); a range is not hash-verified. Existing `path`
  // is replaced only on success.
  absl::Status DownloadToFile(const std::string& sha256, const std::string& path,
                              int64_t offset = 0, int64_t length = 0, ProgressFn progress = {});

  // A verified local copy of blob `sha256` at `cache_dir`/<sha256><suffix>: an existing copy
  // whose hash matches is reused, otherwise the blob is downloaded (DownloadToFile). Copies are
  // written one at a time per process; processes sharing `cache_dir` (the ranks of a job, on
  // one machine or several) each download under a temporary name of their own and rename it
  // into place, so a reader sees no copy or a whole one. Copies are read-only (every write
  // permission taken off, on older copies too): a copy later runs read cannot be edited by mistake,
  // and one changed anyway fails its hash and is fetched again.
  absl::StatusOr<std::string> CachedCopy(const std::string& sha256, const std::string& cache_dir,
                                         const std::string& suffix);

  // Downloads the whole blob into memory, verified.
  absl::StatusOr<std::string> DownloadToString(const std::string& sha256);

  // Thin wrappers over the unary RPCs of registry.proto.
  absl::StatusOr<v1::Checkpoint> RegisterCheckpoint(const v1::RegisterCheckpointRequest& request);
  absl::StatusOr<v1::Dataset> RegisterDataset(const v1::RegisterDatasetRequest& request);
  absl::StatusOr<v1::Checkpoint> GetCheckpoint(const std::string& ref);
  absl::StatusOr<v1::Dataset> GetDataset(const std::string& ref);
  absl::StatusOr<v1::ListCheckpointsResponse> ListCheckpoints(
      const v1::ListCheckpointsRequest& request);
  absl::StatusOr<v1::ListDatasetsResponse> ListDatasets(const v1::ListDatasetsRequest& request);
  absl::StatusOr<v1::AliasEvent> SetAlias(const v1::SetAliasRequest& request);
  absl::StatusOr<v1::AliasEvent> Promote(const v1::PromoteRequest& request);
  absl::StatusOr<v1::AliasHistoryResponse> AliasHistory(const v1::AliasHistoryRequest& request);
  absl::StatusOr<v1::LineageResponse> Lineage(const std::string& ref);
  absl::StatusOr<v1::VerifyResponse> Verify(const std::string& ref);
  absl::StatusOr<v1::GcResponse> CollectGarbage(const v1::GcRequest& request);
  absl::StatusOr<v1::UploadStatusResponse> UploadStatus(const std::string& sha256);

 private:
  template <typename Request, typename Response>
  using UnaryMethod = grpc::Status (v1::RegistryService::Stub::*)(grpc::ClientContext*,
                                                                  const Request&, Response*);

  template <typename Request, typename Response>
  absl::StatusOr<Response> CallUnary(UnaryMethod<Request, Response> method, const Request& request,
                                     const char* name);

  absl::StatusOr<v1::BlobInfo> SendFrom(const std::string& path, const std::string& sha256,
                                        int64_t size, int64_t offset, const ProgressFn& progress);

  std::shared_ptr<const common::GrpcChannel> channel_;
  std::unique_ptr<v1::RegistryService::Stub> stub_;
  Options options_;
};

}  // namespace roboloop::registry
