// Fuzz target: the registry's transport-free handler (registry/registry.h) fed decoded request
// messages, as RegistryService's gRPC adapter would. Input: one byte choosing the method, then
// the serialized request proto of that method (kMethodCount; docs/RELIABILITY.md).
// Every input runs against a fresh copy of one seeded store (a blob, a checkpoint of model
// "fuzz-model" aliased by latest and champion, a dataset "fuzz-data"), so a finding reproduces
// from its input alone. Errors are Statuses; only crashes and sanitizer reports are findings.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "registry/registry.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using roboloop::fuzz::Dispatch;
using roboloop::fuzz::RequireOk;

namespace fs = std::filesystem;
using roboloop::registry::Registry;
namespace v1 = roboloop::v1;

std::unique_ptr<Registry> OpenRegistry(const std::string& root) {
  Registry::Options options;
  options.root = root;
  options.durable_commits = false;
  absl::StatusOr<std::unique_ptr<Registry>> registry = Registry::Create(options);
  RequireOk(registry.status(), "opening the registry");
  return std::move(*registry);
}

std::string SeedManifest(const v1::BlobInfo& policy) {
  return absl::StrCat(R"({"format_version": 1, "model": "fuzz-model",
    "policy": {"kind": "mlp", "options": {"hidden": [8]}},
    "obs_spec": {"names": ["qpos"], "shapes": [[2]]},
    "action_spec": {"names": ["force"], "shapes": [[1]]},
    "normalization": {}, "action_chunk": {"horizon": 1}, "dataset_id": "", "parent_id": "",
    "step": 1, "metrics": {}, "provenance": {},
    "blobs": {"policy": {"sha256": ")", policy.sha256(), R"(", "size": )", policy.size(), "}}}");
}

// The seeded store every input starts from (built once).
const std::string& TemplateStore() {
  static const std::string* const kRoot = [] {
    auto* root = new std::string(roboloop::fuzz::ScratchDir() + "/template");
    std::unique_ptr<Registry> registry = OpenRegistry(*root);
    absl::StatusOr<v1::BlobInfo> policy = registry->PutBlob("fuzz policy weights");
    RequireOk(policy.status(), "storing the seed blob");
    v1::RegisterCheckpointRequest checkpoint;
    checkpoint.set_model("fuzz-model");
    checkpoint.set_manifest_json(SeedManifest(*policy));
    RequireOk(registry->RegisterCheckpoint(checkpoint).status(), "registering the seed checkpoint");
    v1::PromoteRequest promote;
    promote.set_model("fuzz-model");
    promote.set_ref("fuzz-model:v1");
    promote.set_reason("seed");
    RequireOk(registry->Promote(promote).status(), "promoting the seed checkpoint");
    absl::StatusOr<v1::BlobInfo> data = registry->PutBlob("fuzz dataset bytes");
    RequireOk(data.status(), "storing the seed dataset blob");
    v1::RegisterDatasetRequest dataset;
    dataset.set_name("fuzz-data");
    dataset.set_blob_sha256(data->sha256());
    RequireOk(registry->RegisterDataset(dataset).status(), "registering the seed dataset");
    return root;
  }();
  return *kRoot;
}

// A fresh copy of the template store.
std::unique_ptr<Registry> FreshRegistry() {
  const std::string root = roboloop::fuzz::ScratchDir() + "/store";
  fs::remove_all(root);
  fs::copy(TemplateStore(), root, fs::copy_options::recursive);
  return OpenRegistry(root);
}

// Reads a download to its end as DownloadBlob does (chunk size clamped like the adapter).
void Download(Registry& registry, const v1::DownloadRequest& request) {
  absl::StatusOr<std::unique_ptr<roboloop::registry::BlobReader>> reader = registry.OpenBlob(request);
  if (!reader.ok()) return;
  const size_t chunk = request.chunk_size() > 0 && request.chunk_size() <= (4 << 20)
                           ? static_cast<size_t>(request.chunk_size()) : size_t{1} << 20;
  for (;;) {
    absl::StatusOr<std::string> data = (*reader)->Read(chunk);
    if (!data.ok() || data->empty()) return;
  }
}

// One upload stream of a single message, as UploadBlob handles it.
void Upload(Registry& registry, const v1::UploadChunk& chunk) {
  const v1::UploadChunk::Header& header = chunk.header();
  if (!chunk.data().empty() &&
      !registry.AppendUpload(header.sha256(), header.size(), header.offset(), chunk.data()).ok()) {
    return;
  }
  registry.FinishUpload(header.sha256(), header.size()).IgnoreError();
}

// RPCs of RegistryService, in proto order; the first input byte modulo this picks one.
constexpr uint8_t kMethodCount = 15;

// Calls method `method` (proto order) with the request parsed from `bytes`.
void Call(Registry& r, uint8_t method, const std::string& bytes) {
  switch (method) {
    case 0: return Dispatch<v1::UploadChunk>(bytes, [&](const auto& q) { Upload(r, q); });
    case 1: return Dispatch<v1::UploadStatusRequest>(bytes, [&](const auto& q) { r.UploadStatus(q).IgnoreError(); });
    case 2: return Dispatch<v1::DownloadRequest>(bytes, [&](const auto& q) { Download(r, q); });
    case 3: return Dispatch<v1::RegisterCheckpointRequest>(bytes, [&](const auto& q) { r.RegisterCheckpoint(q).IgnoreError(); });
    case 4: return Dispatch<v1::RegisterDatasetRequest>(bytes, [&](const auto& q) { r.RegisterDataset(q).IgnoreError(); });
    case 5: return Dispatch<v1::GetRequest>(bytes, [&](const auto& q) { r.GetCheckpoint(q).IgnoreError(); });
    case 6: return Dispatch<v1::GetRequest>(bytes, [&](const auto& q) { r.GetDataset(q).IgnoreError(); });
    case 7: return Dispatch<v1::ListCheckpointsRequest>(bytes, [&](const auto& q) { r.ListCheckpoints(q).IgnoreError(); });
    case 8: return Dispatch<v1::ListDatasetsRequest>(bytes, [&](const auto& q) { r.ListDatasets(q).IgnoreError(); });
    case 9: return Dispatch<v1::SetAliasRequest>(bytes, [&](const auto& q) { r.SetAlias(q).IgnoreError(); });
    case 10: return Dispatch<v1::PromoteRequest>(bytes, [&](const auto& q) { r.Promote(q).IgnoreError(); });
    case 11: return Dispatch<v1::AliasHistoryRequest>(bytes, [&](const auto& q) { r.AliasHistory(q).IgnoreError(); });
    case 12: return Dispatch<v1::LineageRequest>(bytes, [&](const auto& q) { r.Lineage(q).IgnoreError(); });
    case 13: return Dispatch<v1::VerifyRequest>(bytes, [&](const auto& q) { r.Verify(q).IgnoreError(); });
    case 14: return Dispatch<v1::GcRequest>(bytes, [&](const auto& q) { r.CollectGarbage(q).IgnoreError(); });
    default: return;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::unique_ptr<Registry> registry = FreshRegistry();
  Call(*registry, data[0] % kMethodCount, std::string(reinterpret_cast<const char*>(data + 1), size - 1));
  return 0;
}
