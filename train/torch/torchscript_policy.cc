// TorchScript policies: torch::jit::load, the checkpoint's normalization around the module, and a
// row-at-a-time batch-invariant mode.
#include <torch/script.h>

#include <torch/version.h>

#include <regex>

#include "train/torch/inference_policy.h"
#include "train/torch/policy_normalization.h"

namespace roboloop::train {
namespace {

class TorchScriptPolicy : public InferencePolicy {
 public:
  TorchScriptPolicy(torch::jit::Module module, PolicyNormalization normalization)
      : module_(std::move(module)), normalization_(std::move(normalization)) {
    module_.eval();
  }

  torch::Tensor Forward(const torch::Tensor& raw_obs, bool batch_invariant) override {
    torch::NoGradGuard no_grad;
    const torch::Tensor obs = normalization_.NormalizeObs(raw_obs);
    if (!batch_invariant) return normalization_.DenormalizeActions(Run(obs));
    // A row run alone is computed the same way whatever batch it came from.
    std::vector<torch::Tensor> rows;
    rows.reserve(static_cast<size_t>(obs.size(0)));
    for (int64_t i = 0; i < obs.size(0); ++i) rows.push_back(Run(obs.narrow(0, i, 1)));
    return normalization_.DenormalizeActions(rows.empty() ? Run(obs) : torch::cat(rows, 0));
  }

  torch::Tensor ForwardChunk(const torch::Tensor& obs, const torch::Tensor&, const torch::Tensor&,
                             bool batch_invariant) override {
    return Forward(obs.select(1, obs.size(1) - 1).contiguous(), batch_invariant).unsqueeze(1);
  }

 private:
  torch::Tensor Run(const torch::Tensor& obs) {
    c10::IValue out = module_.forward({obs});
    TORCH_CHECK(out.isTensor(), "forward returned ", out.tagKind(), ", not a tensor");
    return out.toTensor();
  }

  torch::jit::Module module_;
  PolicyNormalization normalization_;
};

// The op named by LibTorch's "Unknown builtin op: aten::x" message, or "".
std::string UnknownOpIn(const std::string& message) {
  static const std::regex kUnknownOp("Unknown builtin op: ([A-Za-z0-9_:.]+[A-Za-z0-9_])");
  std::smatch match;
  return std::regex_search(message, match, kUnknownOp) ? match[1].str() : "";
}

// Throws the error of a failed torch::jit::load with LibTorch's `message`.
[[noreturn]] void ThrowLoadError(const std::string& message) {
  const std::string op = UnknownOpIn(message);
  TORCH_CHECK(op.empty(), "TorchScript file uses op ", op, ", which LibTorch ", TORCH_VERSION,
              " lacks (saved by a newer PyTorch?)");
  TORCH_CHECK(false, "not a loadable TorchScript file: ", message);
}

}  // namespace

std::unique_ptr<InferencePolicy> LoadTorchScriptPolicy(const std::string& path, const nlohmann::json& normalization) {
  PolicyNormalization stats = PolicyNormalization::FromJson(normalization, -1, -1);
  try {
    return std::make_unique<TorchScriptPolicy>(torch::jit::load(path), std::move(stats));
  } catch (const c10::Error& e) {
    ThrowLoadError(e.what_without_backtrace());
  } catch (const std::exception& e) {
    // The TorchScript compiler reports unknown ops as torch::jit::ErrorReport, not c10::Error.
    ThrowLoadError(e.what());
  }
}

}  // namespace roboloop::train
