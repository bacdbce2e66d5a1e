#include "common/access_roles.h"

#include <set>

#include <yaml-cpp/yaml.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/fs.h"
#include "common/sha256.h"

namespace roboloop::common {
namespace {

constexpr absl::string_view kRoleNames[] = {"read", "write", "admin"};

// The string under `key` of `entry`, or "" with a problem noted in `problems`.
std::string RequiredString(const YAML::Node& entry, const char* key, const std::string& where,
                           std::vector<std::string>& problems) {
  const YAML::Node value = entry[key];
  if (!value || !value.IsScalar() || value.Scalar().empty()) {
    problems.push_back(absl::StrCat(where, ": needs a non-empty '", key, "'"));
    return "";
  }
  return value.Scalar();
}

// Checks one entry of the `tokens` list; appends what is wrong to `problems`.
TokenEntry ReadEntry(const YAML::Node& node, size_t index, std::vector<std::string>& problems) {
  const std::string where = absl::StrCat("tokens[", index, "]");
  TokenEntry entry;
  if (!node.IsMap()) {
    problems.push_back(absl::StrCat(where, ": is not a mapping {name, sha256, role}"));
    return entry;
  }
  for (const auto& field : node) {
    const std::string key = field.first.as<std::string>();
    if (key != "name" && key != "sha256" && key != "role") {
      problems.push_back(absl::StrCat(where, ": unknown key '", key, "' (known: name, sha256, role)"));
    }
  }
  entry.name = RequiredString(node, "name", where, problems);
  entry.sha256 = RequiredString(node, "sha256", where, problems);
  if (!entry.sha256.empty() && !IsSha256Hex(entry.sha256)) {
    problems.push_back(absl::StrCat(where, ": sha256 is not 64 lowercase hex characters"));
  }
  const std::string role = RequiredString(node, "role", where, problems);
  if (!role.empty()) {
    absl::StatusOr<Role> parsed = ParseRole(role);
    if (parsed.ok()) {
      entry.role = *parsed;
    } else {
      problems.push_back(absl::StrCat(where, ": ", parsed.status().message()));
    }
  }
  return entry;
}

// Notes every name and digest that occurs twice.
void CheckUnique(const std::vector<TokenEntry>& entries, std::vector<std::string>& problems) {
  std::set<std::string> names;
  std::set<std::string> digests;
  for (size_t i = 0; i < entries.size(); ++i) {
    const TokenEntry& entry = entries[i];
    if (!entry.name.empty() && !names.insert(entry.name).second) {
      problems.push_back(absl::StrCat("tokens[", i, "]: name '", entry.name, "' is repeated"));
    }
    if (!entry.sha256.empty() && !digests.insert(entry.sha256).second) {
      problems.push_back(absl::StrCat("tokens[", i, "]: sha256 repeats an earlier entry's"));
    }
  }
}

}  // namespace

absl::string_view RoleName(Role role) { return kRoleNames[static_cast<int>(role)]; }

absl::StatusOr<Role> ParseRole(absl::string_view text) {
  for (int i = 0; i < 3; ++i) {
    if (text == kRoleNames[i]) return static_cast<Role>(i);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown role '", text, "' (known: read, write, admin)"));
}

absl::StatusOr<std::vector<TokenEntry>> ReadTokensFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) {
    return absl::NotFoundError(absl::StrCat("tokens file '", path, "': ", text.status().message()));
  }
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("tokens file '", path, "': not YAML: ", e.what()));
  }
  if (!root.IsMap() || !root["tokens"] || !root["tokens"].IsSequence()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tokens file '", path, "': expected a mapping with a 'tokens' list of {name, sha256, role}"));
  }
  std::vector<std::string> problems;
  std::vector<TokenEntry> entries;
  const YAML::Node tokens = root["tokens"];
  for (size_t i = 0; i < tokens.size(); ++i) entries.push_back(ReadEntry(tokens[i], i, problems));
  CheckUnique(entries, problems);
  if (entries.empty()) problems.push_back("the 'tokens' list is empty: no caller could call");
  if (!problems.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("tokens file '", path, "' has ",
                                                   problems.size(), " problem(s):\n  ",
                                                   absl::StrJoin(problems, "\n  ")));
  }
  return entries;
}

}  // namespace roboloop::common
