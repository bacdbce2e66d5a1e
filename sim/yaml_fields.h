// Reading the fields of one YAML document while collecting every problem (file, line and key
// path) instead of stopping at the first; the declarative task parser (sim/yaml_task_parser.h)
// reports them all at once.
#pragma once

#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "yaml-cpp/yaml.h"

namespace roboloop::sim {

// The key path of `key` under the key path `at` ("" for the document): "success.rule".
std::string KeyPath(const std::string& at, const std::string& key);

// What Get<T> names as the expected type in a wrong-type problem.
inline const char* YamlTypeName(const std::string*) { return "a string"; }
inline const char* YamlTypeName(const double*) { return "a number"; }
inline const char* YamlTypeName(const int*) { return "an integer"; }
inline const char* YamlTypeName(const std::vector<double>*) { return "a list of numbers"; }

// False for a NaN or infinite number (or list holding one); true for every other value.
inline bool YamlValueIsFinite(double value) { return std::isfinite(value); }
inline bool YamlValueIsFinite(const std::vector<double>& values) {
  for (double value : values) {
    if (!std::isfinite(value)) return false;
  }
  return true;
}
template <typename T>
bool YamlValueIsFinite(const T&) { return true; }

// The problems found in the YAML file at `path`, and checked reads that record them.
class YamlFields {
 public:
  explicit YamlFields(std::string path) : path_(std::move(path)) {}

  // Records "<path>:<line of node>: <at>: <message>" (newlines in `message` become spaces).
  void Problem(const YAML::Node& node, const std::string& at, const std::string& message);

  // False (and a problem) when `node` (at key path `at`) is not a mapping; otherwise records a
  // problem per key not in `allowed` and returns true.
  bool CheckKeys(const YAML::Node& node, const std::string& at, const std::set<std::string>& allowed);

  // The value under `key` of the mapping `node`; nullopt and a problem when it is missing, has
  // another type or is a number that is not finite (.nan, .inf).
  template <typename T>
  std::optional<T> Get(const YAML::Node& node, const std::string& at, const std::string& key) {
    const YAML::Node value = node[key];
    if (!value) {
      Problem(node, at, absl::StrCat("missing key '", key, "'"));
      return std::nullopt;
    }
    std::optional<T> result;
    try {
      result = value.as<T>();
    } catch (const YAML::Exception&) {
      Problem(value, KeyPath(at, key),
              absl::StrCat("has the wrong type; expected ", YamlTypeName(static_cast<T*>(nullptr))));
      return std::nullopt;
    }
    if (!YamlValueIsFinite(*result)) {
      Problem(value, KeyPath(at, key), "is not finite (NaN or infinity); numbers in a task file must be finite");
      return std::nullopt;
    }
    return result;
  }

  // Get<int> that also records a problem for a value below 1.
  std::optional<int> PositiveInt(const YAML::Node& node, const std::string& at, const std::string& key);

  // The items of the list under `key` of `root`, each with its key path ("reward[2]"); none
  // when absent or null, none and a problem when not a list.
  std::vector<std::pair<YAML::Node, std::string>> List(const YAML::Node& root, const std::string& key);

  // OK when nothing was recorded; otherwise InvalidArgument: "<header>: <n> problem(s):" and
  // one line per problem, in the order found.
  absl::Status Result(const std::string& header) const;

 private:
  std::string path_;
  std::vector<std::string> problems_;
};

}  // namespace roboloop::sim
