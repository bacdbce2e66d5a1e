#include "cli/version.h"

#include <cstdio>
#include <string>
#include <mujoco/mujoco.h>
#include <nlohmann/json.hpp>

#include "common/status.h"
#include "common/version.h"
#include "train/torch_runtime.h"

namespace roboloop::cli {
namespace {

// `value`, or "unset" where it is empty.
std::string OrUnset(const std::string& value) { return value.empty() ? "unset" : value; }

}  // namespace

absl::Status PrintVersion(bool verbose) {
  std::printf("%s\n", VersionLine().c_str());
  if (!verbose) return absl::OkStatus();
  ROBOLOOP_ASSIGN_OR_RETURN(const train::TorchRuntime* torch, train::TorchRuntime::Load());
  nlohmann::json info = nlohmann::json::parse(torch->DescribeRuntime());
  std::printf("libtorch %s (loaded from %s)\n", info["libtorch_version"].get<std::string>().c_str(),
              torch->path().c_str());
  std::printf("cuda compiled in: %s (toolkit %s, architectures %s); available: %s (%d devices)\n",
              info["cuda_compiled"].get<bool>() ? "yes" : "no",
              info["cuda_toolkit"].get<std::string>().c_str(),
              info["cuda_architectures"].get<std::string>().c_str(),
              info["cuda_available"].get<bool>() ? "yes" : "no", info["cuda_devices"].get<int>());
  std::printf("mujoco %s\n", mj_versionString());
  std::printf("torch intra-op threads: %d, inter-op threads: %d, OMP_WAIT_POLICY %s, GOMP_SPINCOUNT %s\n",
              info["intra_op_threads"].get<int>(), info["inter_op_threads"].get<int>(),
              OrUnset(info["omp_wait_policy"].get<std::string>()).c_str(),
              OrUnset(info["gomp_spincount"].get<std::string>()).c_str());
  std::printf("%s", info["parallel_info"].get<std::string>().c_str());
  return absl::OkStatus();
}

}  // namespace roboloop::cli
