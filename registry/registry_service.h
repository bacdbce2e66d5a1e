// The gRPC adapter of the registry: translates RegistryService calls into Registry calls.
// All logic (validation, storage, references) lives in registry/registry.h. The adapter applies
// the limits of served uploads (issue 25, req 6): the largest blob one upload may declare and each
// caller's storage quota (RESOURCE_EXHAUSTED, nothing written), and an upload a server call limit
// cancels (common/grpc_call_limits.h) discards what it held. The caller of a server without a
// tokens file is kSharedCaller.
#pragma once

#include <grpcpp/grpcpp.h>

#include "registry/registry.h"
#include "roboloop/v1/registry.grpc.pb.h"

namespace roboloop::registry {

// The caller whose quota uploads count against when the server authenticates no one by name.
inline constexpr char kSharedCaller[] = "(shared)";

// Thread-safe: gRPC calls handlers concurrently; Registry is thread-safe.
class RegistryServiceImpl final : public v1::RegistryService::Service {
 public:
  struct Options {
    int download_chunk_bytes = 1 << 20;      // chunk size when the client names none
    int max_download_chunk_bytes = 4 << 20;  // upper bound on a requested chunk size
    int64_t max_upload_bytes = 0;            // largest blob one upload may declare; 0 = no limit
    int64_t caller_quota_bytes = 0;          // bytes of blobs each caller may store; 0 = no quota
  };

  // Serves `registry` (not owned; must outlive the service).
  RegistryServiceImpl(Registry* registry, Options options);

  grpc::Status UploadBlob(grpc::ServerContext* context, grpc::ServerReader<v1::UploadChunk>* reader,
                          v1::BlobInfo* response) override;
  grpc::Status UploadStatus(grpc::ServerContext* context, const v1::UploadStatusRequest* request,
                            v1::UploadStatusResponse* response) override;
  grpc::Status DownloadBlob(grpc::ServerContext* context, const v1::DownloadRequest* request,
                            grpc::ServerWriter<v1::DownloadChunk>* writer) override;
  grpc::Status RegisterCheckpoint(grpc::ServerContext* context,
                                  const v1::RegisterCheckpointRequest* request,
                                  v1::Checkpoint* response) override;
  grpc::Status RegisterDataset(grpc::ServerContext* context, const v1::RegisterDatasetRequest* request,
                               v1::Dataset* response) override;
  grpc::Status GetCheckpoint(grpc::ServerContext* context, const v1::GetRequest* request,
                             v1::Checkpoint* response) override;
  grpc::Status GetDataset(grpc::ServerContext* context, const v1::GetRequest* request,
                          v1::Dataset* response) override;
  grpc::Status ListCheckpoints(grpc::ServerContext* context, const v1::ListCheckpointsRequest* request,
                               v1::ListCheckpointsResponse* response) override;
  grpc::Status ListDatasets(grpc::ServerContext* context, const v1::ListDatasetsRequest* request,
                            v1::ListDatasetsResponse* response) override;
  grpc::Status SetAlias(grpc::ServerContext* context, const v1::SetAliasRequest* request,
                        v1::AliasEvent* response) override;
  grpc::Status Promote(grpc::ServerContext* context, const v1::PromoteRequest* request,
                       v1::AliasEvent* response) override;
  grpc::Status AliasHistory(grpc::ServerContext* context, const v1::AliasHistoryRequest* request,
                            v1::AliasHistoryResponse* response) override;
  grpc::Status Lineage(grpc::ServerContext* context, const v1::LineageRequest* request,
                       v1::LineageResponse* response) override;
  grpc::Status Verify(grpc::ServerContext* context, const v1::VerifyRequest* request,
                      v1::VerifyResponse* response) override;
  grpc::Status CollectGarbage(grpc::ServerContext* context, const v1::GcRequest* request,
                              v1::GcResponse* response) override;

 private:
  // The status of an upload whose call ended early: a call a server limit cancelled discards
  // the upload's partial content (DEADLINE_EXCEEDED with the limit's message); a call the client
  // cancelled keeps it for resuming (CANCELLED).
  grpc::Status EndCancelledUpload(const grpc::ServerContext& context, const std::string& sha256);

  Registry* registry_;
  Options options_;
};

}  // namespace roboloop::registry
