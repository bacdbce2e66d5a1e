#include "sim/yaml_fields.h"

#include <map>

#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace roboloop::sim {

std::string KeyPath(const std::string& at, const std::string& key) {
  return at.empty() ? key : absl::StrCat(at, ".", key);
}

void YamlFields::Problem(const YAML::Node& node, const std::string& at, const std::string& message) {
  problems_.push_back(absl::StrCat(path_, ":", node.Mark().line + 1, ": ", at.empty() ? "" : at + ": ",
                                   absl::StrReplaceAll(message, {{"\n", " "}})));
}

bool YamlFields::CheckKeys(const YAML::Node& node, const std::string& at, const std::set<std::string>& allowed) {
  if (!node.IsMap()) {
    Problem(node, at, "expected a mapping");
    return false;
  }
  std::map<std::string, int> first_line;  // where each key was first given
  for (const auto& item : node) {
    const std::string key = item.first.Scalar();
    if (allowed.count(key) == 0) {
      Problem(item.first, KeyPath(at, key),
              absl::StrCat("unknown key '", key, "'; expected one of: ", absl::StrJoin(allowed, ", ")));
    }
    const auto [seen, first] = first_line.emplace(key, item.first.Mark().line + 1);
    if (!first) {
      Problem(item.first, KeyPath(at, key), absl::StrCat("duplicate key '", key, "' (given at line ", seen->second, ")"));
    }
  }
  return true;
}

std::optional<int> YamlFields::PositiveInt(const YAML::Node& node, const std::string& at, const std::string& key) {
  std::optional<int> value = Get<int>(node, at, key);
  if (value && *value < 1) {
    Problem(node[key], KeyPath(at, key), "must be >= 1");
    return std::nullopt;
  }
  return value;
}

std::vector<std::pair<YAML::Node, std::string>> YamlFields::List(const YAML::Node& root, const std::string& key) {
  const YAML::Node node = root[key];
  std::vector<std::pair<YAML::Node, std::string>> items;
  if (!node || node.IsNull()) return items;
  if (!node.IsSequence()) {
    Problem(node, key, "expected a list");
    return items;
  }
  for (size_t i = 0; i < node.size(); ++i) items.emplace_back(node[i], absl::StrCat(key, "[", i, "]"));
  return items;
}

absl::Status YamlFields::Result(const std::string& header) const {
  if (problems_.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(header, ": ", problems_.size(),
                                                 problems_.size() == 1 ? " problem:\n" : " problems:\n",
                                                 absl::StrJoin(problems_, "\n")));
}

}  // namespace roboloop::sim
