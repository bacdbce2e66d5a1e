// Helpers shared by the registry tests: scratch directories and manifest builders.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/fs.h"
#include "common/ids.h"
#include "common/sha256.h"

namespace roboloop::registry::testing_util {

// A fresh directory under the test temp dir, removed (with its content) on destruction.
class ScopedDir {
 public:
  ScopedDir() : path_(JoinPath(::testing::TempDir(), "registry-" + NewUuid())) {
    std::filesystem::create_directories(path_);
  }
  ~ScopedDir() {
    std::error_code ignored;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ignored);
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// One blob a manifest names.
struct BlobSpec {
  std::string role;
  std::string content;
};

// A valid format-1 manifest for `model` naming `blobs`, at training `step`.
inline nlohmann::json MakeManifest(const std::string& model, const std::vector<BlobSpec>& blobs,
                                   int64_t step, const std::string& parent_id = "",
                                   const std::string& dataset_id = "") {
  nlohmann::json blob_map = nlohmann::json::object();
  for (const BlobSpec& blob : blobs) {
    blob_map[blob.role] = {{"sha256", Sha256Hex(blob.content)},
                           {"size", static_cast<int64_t>(blob.content.size())}};
  }
  nlohmann::json manifest = nlohmann::json::parse(R"({
    "format_version": 1,
    "policy": {"kind": "mlp", "options": {"hidden": [64, 64]}},
    "obs_spec": {"names": ["qpos"], "shapes": [[4]]},
    "action_spec": {"names": ["force"], "shapes": [[1]],
                    "bounds": [{"low": [-1.0], "high": [1.0]}]},
    "normalization": {"qpos": {"mean": [0, 0, 0, 0], "std": [1, 1, 1, 1]}},
    "action_chunk": {"horizon": 1, "execution": "receding"},
    "metrics": {"loss": 0.5},
    "provenance": {"roboloop_version": "0.1.0", "libraries": {"mujoco": "3.3.7"}}
  })");
  manifest["model"] = model;
  manifest["step"] = step;
  manifest["parent_id"] = parent_id;
  manifest["dataset_id"] = dataset_id;
  manifest["blobs"] = blob_map;
  return manifest;
}

}  // namespace roboloop::registry::testing_util
