// The built-in policy kinds: one line per kind.
#include "registry/builtin_policy_kinds.h"

namespace roboloop::registry {

std::vector<PolicyKind> BuiltinPolicyKinds() {
  return {
      MlpPolicyKind(),
      TransformerPolicyKind(),
      TorchScriptPolicyKind(),
  };
}

const std::string& DefaultPolicyKindName() {
  static const std::string kName = TransformerPolicyKind().name;
  return kName;
}

}  // namespace roboloop::registry
