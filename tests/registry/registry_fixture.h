// A Registry on a scratch root with helpers to upload blobs and register checkpoints.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "registry/registry.h"
#include "tests/registry/test_util.h"

namespace roboloop::registry::testing_util {

class RegistryFixture : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }

  // (Re)opens the registry on the fixture's root.
  void Open() {
    registry_.reset();
    Registry::Options options;
    options.root = dir_.path();
    options.gc_grace = absl::ZeroDuration();
    auto registry = Registry::Create(options);
    ASSERT_TRUE(registry.ok()) << registry.status();
    registry_ = *std::move(registry);
  }

  // Uploads every blob and registers a manifest for `model` at `step`.
  absl::StatusOr<v1::Checkpoint> Register(const std::string& model, int64_t step,
                                          const std::string& parent = "",
                                          const std::string& dataset = "") {
    std::vector<BlobSpec> blobs = {{"policy", absl::StrCat(model, "-weights-", step)},
                                   {"trainer_state", "optimizer"}};
    for (const BlobSpec& blob : blobs) {
      auto put = registry_->PutBlob(blob.content);
      if (!put.ok()) return put.status();
    }
    v1::RegisterCheckpointRequest request;
    request.set_manifest_json(MakeManifest(model, blobs, step, parent, dataset).dump());
    request.set_run_id("run-1");
    return registry_->RegisterCheckpoint(request, Actor{"tester", "testhost"});
  }

  absl::StatusOr<v1::Dataset> RegisterData(const std::string& name, const std::string& content,
                                           std::vector<std::string> parents = {}) {
    auto put = registry_->PutBlob(content);
    if (!put.ok()) return put.status();
    v1::RegisterDatasetRequest request;
    request.set_name(name);
    request.set_blob_sha256(put->sha256());
    for (const std::string& parent : parents) request.add_parent_refs(parent);
    return registry_->RegisterDataset(request);
  }

  ScopedDir dir_;
  std::unique_ptr<Registry> registry_;
};

}  // namespace roboloop::registry::testing_util
