#include "registry/registry_service.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/grpc_call_limits.h"
#include "common/grpc_caller.h"
#include "common/grpc_server_credentials.h"
#include "common/grpc_status.h"
#include "common/sha256.h"

namespace roboloop::registry {
namespace {

using common::AbslToGrpc;

// The caller as recorded in alias history (common/grpc_caller.h).
Actor CallerOf(const grpc::ServerContext& context) {
  return Actor{common::RequestingUser(context), common::RequestingHost(context)};
}

// The name uploads of this call count against: the authenticated caller, else kSharedCaller.
std::string UploaderName(const grpc::ServerContext& context) {
  std::string caller = common::AuthenticatedCaller(context);
  return caller.empty() ? kSharedCaller : caller;
}

template <typename T>
grpc::Status Fill(absl::StatusOr<T> result, T* response) {
  if (!result.ok()) return AbslToGrpc(result.status());
  *response = std::move(*result);
  return grpc::Status::OK;
}

}  // namespace

RegistryServiceImpl::RegistryServiceImpl(Registry* registry, Options options)
    : registry_(registry), options_(options) {}

grpc::Status RegistryServiceImpl::UploadBlob(grpc::ServerContext* context,
                                             grpc::ServerReader<v1::UploadChunk>* reader,
                                             v1::BlobInfo* response) {
  v1::UploadChunk chunk;
  if (!reader->Read(&chunk)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "upload stream carried no message");
  }
  if (!chunk.has_header()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "the first upload message must carry the header (sha256, size, offset)");
  }
  const v1::UploadChunk::Header header = chunk.header();
  if (options_.max_upload_bytes > 0 && header.size() > options_.max_upload_bytes) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        absl::StrCat("upload of ", header.sha256(), " declares ", header.size(),
                                     " bytes, over the server's upload limit of ", options_.max_upload_bytes,
                                     " bytes (--max-upload-bytes)"));
  }
  const Uploader uploader{UploaderName(*context), options_.caller_quota_bytes};
  absl::Status within_quota = registry_->CheckStorageQuota(uploader, header.sha256(), header.size());
  if (!within_quota.ok()) return AbslToGrpc(within_quota);
  int64_t offset = header.offset();
  // A stream that starts at byte 0 hashes what it appends, so finishing needs no re-read.
  const bool whole_stream = offset == 0;
  Sha256 streamed;
  do {
    if (context->IsCancelled()) return EndCancelledUpload(*context, header.sha256());
    if (!chunk.data().empty()) {
      absl::Status appended =
          registry_->AppendUpload(header.sha256(), header.size(), offset, chunk.data());
      // Content stored meanwhile (or before): the upload is complete, the rest is not needed.
      if (absl::IsAlreadyExists(appended)) break;
      if (!appended.ok()) return AbslToGrpc(appended);
      if (whole_stream) streamed.Update(chunk.data());
      offset += static_cast<int64_t>(chunk.data().size());
    }
  } while (reader->Read(&chunk));
  if (context->IsCancelled()) return EndCancelledUpload(*context, header.sha256());
  std::string digest = whole_stream ? streamed.HexDigest() : "";
  if (offset != header.size()) digest.clear();
  return Fill(registry_->FinishUpload(header.sha256(), header.size(), digest, uploader), response);
}

grpc::Status RegistryServiceImpl::EndCancelledUpload(const grpc::ServerContext& context,
                                                     const std::string& sha256) {
  const std::optional<std::string> breach = common::CallLimitBreach(context);
  if (!breach.has_value()) return grpc::Status(grpc::StatusCode::CANCELLED, "upload cancelled");
  absl::Status aborted = registry_->AbortUpload(sha256);
  if (!aborted.ok()) return AbslToGrpc(aborted);
  return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, *breach);
}

grpc::Status RegistryServiceImpl::UploadStatus(grpc::ServerContext*,
                                               const v1::UploadStatusRequest* request,
                                               v1::UploadStatusResponse* response) {
  return Fill(registry_->UploadStatus(*request), response);
}

grpc::Status RegistryServiceImpl::DownloadBlob(grpc::ServerContext* context,
                                               const v1::DownloadRequest* request,
                                               grpc::ServerWriter<v1::DownloadChunk>* writer) {
  if (request->chunk_size() < 0 || request->offset() < 0 || request->length() < 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "download offset, length and chunk_size must not be negative");
  }
  size_t chunk_bytes = request->chunk_size() == 0
                           ? static_cast<size_t>(options_.download_chunk_bytes)
                           : static_cast<size_t>(std::min(request->chunk_size(),
                                                          options_.max_download_chunk_bytes));
  auto reader = registry_->OpenBlob(*request);
  if (!reader.ok()) return AbslToGrpc(reader.status());
  v1::DownloadChunk chunk;
  chunk.set_total_size((*reader)->blob_size());
  while (true) {
    if (context->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "download cancelled");
    absl::StatusOr<std::string> data = (*reader)->Read(chunk_bytes);
    if (!data.ok()) return AbslToGrpc(data.status());
    if (data->empty()) break;
    chunk.set_data(std::move(*data));
    if (!writer->Write(chunk)) return grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
    chunk.clear_total_size();
  }
  return grpc::Status::OK;
}

grpc::Status RegistryServiceImpl::RegisterCheckpoint(grpc::ServerContext* context,
                                                     const v1::RegisterCheckpointRequest* request,
                                                     v1::Checkpoint* response) {
  return Fill(registry_->RegisterCheckpoint(*request, CallerOf(*context)), response);
}

grpc::Status RegistryServiceImpl::RegisterDataset(grpc::ServerContext*,
                                                  const v1::RegisterDatasetRequest* request,
                                                  v1::Dataset* response) {
  return Fill(registry_->RegisterDataset(*request), response);
}

grpc::Status RegistryServiceImpl::GetCheckpoint(grpc::ServerContext*,
                                                const v1::GetRequest* request,
                                                v1::Checkpoint* response) {
  return Fill(registry_->GetCheckpoint(*request), response);
}

grpc::Status RegistryServiceImpl::GetDataset(grpc::ServerContext*, const v1::GetRequest* request,
                                             v1::Dataset* response) {
  return Fill(registry_->GetDataset(*request), response);
}

grpc::Status RegistryServiceImpl::ListCheckpoints(grpc::ServerContext*,
                                                  const v1::ListCheckpointsRequest* request,
                                                  v1::ListCheckpointsResponse* response) {
  return Fill(registry_->ListCheckpoints(*request), response);
}

grpc::Status RegistryServiceImpl::ListDatasets(grpc::ServerContext*,
                                               const v1::ListDatasetsRequest* request,
                                               v1::ListDatasetsResponse* response) {
  return Fill(registry_->ListDatasets(*request), response);
}

grpc::Status RegistryServiceImpl::SetAlias(grpc::ServerContext* context,
                                           const v1::SetAliasRequest* request,
                                           v1::AliasEvent* response) {
  return Fill(registry_->SetAlias(*request, CallerOf(*context)), response);
}

grpc::Status RegistryServiceImpl::Promote(grpc::ServerContext* context, const v1::PromoteRequest* request,
                                          v1::AliasEvent* response) {
  return Fill(registry_->Promote(*request, CallerOf(*context)), response);
}

grpc::Status RegistryServiceImpl::AliasHistory(grpc::ServerContext*,
                                               const v1::AliasHistoryRequest* request,
                                               v1::AliasHistoryResponse* response) {
  return Fill(registry_->AliasHistory(*request), response);
}

grpc::Status RegistryServiceImpl::Lineage(grpc::ServerContext*, const v1::LineageRequest* request,
                                          v1::LineageResponse* response) {
  return Fill(registry_->Lineage(*request), response);
}

grpc::Status RegistryServiceImpl::Verify(grpc::ServerContext*, const v1::VerifyRequest* request,
                                         v1::VerifyResponse* response) {
  return Fill(registry_->Verify(*request), response);
}

grpc::Status RegistryServiceImpl::CollectGarbage(grpc::ServerContext*,
                                                 const v1::GcRequest* request,
                                                 v1::GcResponse* response) {
  return Fill(registry_->CollectGarbage(*request), response);
}

}  // namespace roboloop::registry
