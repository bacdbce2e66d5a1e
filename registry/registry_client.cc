#include "registry/registry_client.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/fs.h"
#include "common/sha256.h"
#include "common/status.h"

namespace roboloop::registry {
namespace {

// The bytes a download of `length` bytes from `offset` (length 0 = to the end) of a blob of `size` bytes receives.
int64_t RangeBytes(int64_t size, int64_t offset, int64_t length) {
  const int64_t rest = std::max<int64_t>(0, size - offset);
  return length > 0 ? std::min(length, rest) : rest;
}

}  // namespace

RegistryClient::RegistryClient(std::shared_ptr<const common::GrpcChannel> channel, Options options)
    : channel_(std::move(channel)),
      stub_(v1::RegistryService::NewStub(channel_->channel())),
      options_(options) {}

absl::StatusOr<std::unique_ptr<RegistryClient>> RegistryClient::Connect(
    const common::GrpcChannelOptions& channel_options, Options options) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::shared_ptr<const common::GrpcChannel> channel,
                            common::GrpcChannel::Create(channel_options));
  return std::make_unique<RegistryClient>(std::move(channel), options);
}

template <typename Request, typename Response>
absl::StatusOr<Response> RegistryClient::CallUnary(UnaryMethod<Request, Response> method,
                                                   const Request& request, const char* name) {
  std::unique_ptr<grpc::ClientContext> context = channel_->NewContext();
  Response response;
  grpc::Status status = (stub_.get()->*method)(context.get(), request, &response);
  if (!status.ok()) return channel_->CallStatus(status, absl::StrCat("registry ", name));
  return response;
}

absl::StatusOr<v1::BlobInfo> RegistryClient::UploadFile(const std::string& path,
                                                        ProgressFn progress) {
  ROBOLOOP_ASSIGN_OR_RETURN(int64_t size, FileSize(path));
  ROBOLOOP_ASSIGN_OR_RETURN(std::string sha256, Sha256File(path));
  ROBOLOOP_ASSIGN_OR_RETURN(v1::UploadStatusResponse held, UploadStatus(sha256));
  if (held.complete()) {
    v1::BlobInfo info;
    info.set_sha256(sha256);
    info.set_size(size);
    info.set_already_present(true);
    return info;
  }
  int64_t offset = held.bytes_held() <= size ? held.bytes_held() : 0;
  return SendFrom(path, sha256, size, offset, progress);
}

absl::StatusOr<v1::BlobInfo> RegistryClient::SendFrom(const std::string& path,
                                                      const std::string& sha256, int64_t size,
                                                      int64_t offset, const ProgressFn& progress) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoStatus(errno, path);
  in.seekg(offset);
  std::unique_ptr<grpc::ClientContext> context = channel_->NewContext(options_.transfer_deadline);
  v1::BlobInfo info;
  auto writer = stub_->UploadBlob(context.get(), &info);
  v1::UploadChunk chunk;
  chunk.mutable_header()->set_sha256(sha256);
  chunk.mutable_header()->set_size(size);
  chunk.mutable_header()->set_offset(offset);
  std::string buffer(static_cast<size_t>(options_.chunk_bytes), '\0');
  int64_t sent = offset;
  bool stream_ok = true;
  do {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    chunk.set_data(buffer.data(), static_cast<size_t>(in.gcount()));
    stream_ok = writer->Write(chunk);
    chunk.clear_header();
    sent += in.gcount();
    if (progress) progress(sent, size);
  } while (stream_ok && in.gcount() > 0 && sent < size);
  writer->WritesDone();
  grpc::Status status = writer->Finish();
  if (!status.ok()) {
    return channel_->CallStatus(status, absl::StrCat("uploading ", path));
  }
  return info;
}

absl::StatusOr<std::string> RegistryClient::CachedCopy(const std::string& sha256, const std::string& cache_dir,
                                                      const std::string& suffix) {
  static absl::Mutex cache_mu(absl::kConstInit);
  absl::MutexLock lock(&cache_mu);
  ROBOLOOP_RETURN_IF_ERROR(MakeDirs(cache_dir));
  const std::string path = JoinPath(cache_dir, sha256 + suffix);
  const bool intact = PathExists(path) && Sha256File(path).value_or("") == sha256;
  if (intact) {
    ROBOLOOP_RETURN_IF_ERROR(MakeOwnFileReadOnly(path));
    return path;
  }
  ROBOLOOP_RETURN_IF_ERROR(DownloadToFile(sha256, path));
  ROBOLOOP_RETURN_IF_ERROR(MakeReadOnly(path));
  return path;
}

absl::Status RegistryClient::DownloadToFile(const std::string& sha256, const std::string& path,
                                            int64_t offset, int64_t length, ProgressFn progress) {
  // Its own name: processes on several machines (pids may repeat) may download into one folder.
  const std::string temp = PartialPathFor(path);
  UniqueFd out(open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!out.valid()) return ErrnoStatus(errno, temp);
  v1::DownloadRequest request;
  request.set_sha256(sha256);
  request.set_offset(offset);
  request.set_length(length);
  request.set_chunk_size(static_cast<int32_t>(options_.chunk_bytes));
  std::unique_ptr<grpc::ClientContext> context = channel_->NewContext(options_.transfer_deadline);
  auto reader = stub_->DownloadBlob(context.get(), request);
  Sha256 hash;
  v1::DownloadChunk chunk;
  int64_t received = 0;
  int64_t total = 0;
  absl::Status write_status;
  while (write_status.ok() && reader->Read(&chunk)) {
    if (chunk.total_size() > 0) total = RangeBytes(chunk.total_size(), offset, length);
    write_status = WriteAll(out.get(), chunk.data(), temp);
    hash.Update(chunk.data());
    received += static_cast<int64_t>(chunk.data().size());
    if (progress) progress(received, total);
  }
  if (!write_status.ok()) context->TryCancel();
  grpc::Status status = reader->Finish();
  if (write_status.ok()) write_status = FsyncFd(out.get(), temp);
  out = UniqueFd();
  auto fail = [&](absl::Status s) {
    std::remove(temp.c_str());
    return s;
  };
  if (!write_status.ok()) return fail(write_status);
  if (!status.ok()) {
    return fail(channel_->CallStatus(status, absl::StrCat("downloading ", sha256)));
  }
  bool whole = offset == 0 && length == 0;
  if (whole) {
    std::string digest = hash.HexDigest();
    if (digest != sha256) {
      return fail(absl::DataLossError(absl::StrCat("download of ", sha256, " has sha256 ", digest)));
    }
  }
  const absl::Status renamed = RenameDurable(temp, path);
  return renamed.ok() ? renamed : fail(renamed);
}

absl::StatusOr<std::string> RegistryClient::DownloadToString(const std::string& sha256) {
  v1::DownloadRequest request;
  request.set_sha256(sha256);
  request.set_chunk_size(static_cast<int32_t>(options_.chunk_bytes));
  std::unique_ptr<grpc::ClientContext> context = channel_->NewContext(options_.transfer_deadline);
  auto reader = stub_->DownloadBlob(context.get(), request);
  std::string data;
  v1::DownloadChunk chunk;
  while (reader->Read(&chunk)) data.append(chunk.data());
  grpc::Status status = reader->Finish();
  if (!status.ok()) {
    return channel_->CallStatus(status, absl::StrCat("downloading ", sha256));
  }
  if (Sha256Hex(data) != sha256) {
    return absl::DataLossError(absl::StrCat("download of ", sha256, " does not match its hash"));
  }
  return data;
}

absl::StatusOr<v1::Checkpoint> RegistryClient::RegisterCheckpoint(
    const v1::RegisterCheckpointRequest& request) {
  return CallUnary(&v1::RegistryService::Stub::RegisterCheckpoint, request, "register checkpoint");
}

absl::StatusOr<v1::Dataset> RegistryClient::RegisterDataset(const v1::RegisterDatasetRequest& request) {
  return CallUnary(&v1::RegistryService::Stub::RegisterDataset, request, "register dataset");
}

absl::StatusOr<v1::Checkpoint> RegistryClient::GetCheckpoint(const std::string& ref) {
  v1::GetRequest request;
  request.set_ref(ref);
  return CallUnary(&v1::RegistryService::Stub::GetCheckpoint, request, "get checkpoint");
}

absl::StatusOr<v1::Dataset> RegistryClient::GetDataset(const std::string& ref) {
  v1::GetRequest request;
  request.set_ref(ref);
  return CallUnary(&v1::RegistryService::Stub::GetDataset, request, "get dataset");
}

absl::StatusOr<v1::ListCheckpointsResponse> RegistryClient::ListCheckpoints(
    const v1::ListCheckpointsRequest& request) {
  return CallUnary(&v1::RegistryService::Stub::ListCheckpoints, request, "list checkpoints");
}

absl::StatusOr<v1::ListDatasetsResponse> RegistryClient::ListDatasets(
    const v1::ListDatasetsRequest& request) {
  return CallUnary(&v1::RegistryService::Stub::ListDatasets, request, "list datasets");
}

absl::StatusOr<v1::AliasEvent> RegistryClient::SetAlias(const v1::SetAliasRequest& request) {
  return CallUnary(&v1::RegistryService::Stub::SetAlias, request, "set alias");
}

absl::StatusOr<v1::AliasEvent> RegistryClient::Promote(const v1::PromoteRequest& request) {
  return CallUnary(&v1::RegistryService::Stub::Promote, request, "promote");
}

absl::StatusOr<v1::AliasHistoryResponse> RegistryClient::AliasHistory(
    const v1::AliasHistoryRequest& request) {
  return CallUnary(&v1::RegistryService::Stub::AliasHistory, request, "alias history");
}

absl::StatusOr<v1::LineageResponse> RegistryClient::Lineage(const std::string& ref) {
  v1::LineageRequest request;
  request.set_ref(ref);
  return CallUnary(&v1::RegistryService::Stub::Lineage, request, "lineage");
}

absl::StatusOr<v1::VerifyResponse> RegistryClient::Verify(const std::string& ref) {
  v1::VerifyRequest request;
  request.set_ref(ref);
  return CallUnary(&v1::RegistryService::Stub::Verify, request, "verify");
}

absl::StatusOr<v1::GcResponse> RegistryClient::CollectGarbage(const v1::GcRequest& request) {
  return CallUnary(&v1::RegistryService::Stub::CollectGarbage, request, "gc");
}

absl::StatusOr<v1::UploadStatusResponse> RegistryClient::UploadStatus(const std::string& sha256) {
  v1::UploadStatusRequest request;
  request.set_sha256(sha256);
  return CallUnary(&v1::RegistryService::Stub::UploadStatus, request, "upload status");
}

}  // namespace roboloop::registry
