// The rule of train/cuda_graph_rule.h.
#include "train/cuda_graph_rule.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace roboloop::train {
namespace {

// Why `setup`'s step cannot be captured; "" when it can.
std::string WhyNotCapturable(const CudaGraphSetup& setup) {
  if (!setup.cuda) return "the device is the CPU (graphs are CUDA's)";
  if (setup.world_size > 1) {
    return absl::StrCat("world_size is ", setup.world_size,
                        " (gradients are averaged across ranks outside a graph; graphs need one rank)");
  }
  if (setup.packed_attention) {
    return "the transformer packs its sequences (packed: true), so shapes follow each batch; use packed: false";
  }
  if (setup.cameras) return "the policy has cameras (the frames' random shifts are drawn inside the loss)";
  if (!setup.fused_adamw) return "optimizer.fused is false (the graphed update is the fused AdamW's)";
  return "";
}

}  // namespace

absl::StatusOr<bool> UseCudaGraph(std::optional<bool> requested, const CudaGraphSetup& setup) {
  if (requested == false) return false;
  const std::string why_not = WhyNotCapturable(setup);
  if (why_not.empty()) return true;
  if (!requested.has_value()) return false;
  return absl::InvalidArgumentError(
      absl::StrCat("cuda_graph: on, but the training step cannot be captured: ", why_not));
}

absl::StatusOr<std::optional<bool>> ParseCudaGraphOption(const std::string& value) {
  if (value.empty() || value == "auto") return std::optional<bool>();
  if (value == "on") return std::optional<bool>(true);
  if (value == "off") return std::optional<bool>(false);
  return absl::InvalidArgumentError(absl::StrCat("cuda_graph '", value, "' is not one of auto, on, off"));
}

}  // namespace roboloop::train
