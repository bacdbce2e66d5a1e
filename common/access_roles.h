// Roles of callers of the roboloop services (issue 25, req 5): what a bearer token may do. A
// tokens file lists, per caller, a name, the SHA-256 of its token and its role:
//
//   tokens:
//     - {name: alice, sha256: <64 lowercase hex>, role: admin}
//     - {name: ci, sha256: <64 lowercase hex>, role: write}
//
// Roles are ordered: `read` (list, get, leaderboard, reports) < `write` (register, upload,
// evaluate, train) < `admin` (aliases, promotion, gc); a role may call every method of the roles
// below it. The file holds no token itself, only its digest (`sha256sum` of the token's bytes).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace roboloop::common {

// What a caller may do; a larger role includes the smaller ones.
enum class Role { kRead = 0, kWrite = 1, kAdmin = 2 };

// "read", "write" or "admin".
absl::string_view RoleName(Role role);

// Parses "read", "write" or "admin"; InvalidArgument names the accepted words otherwise.
absl::StatusOr<Role> ParseRole(absl::string_view text);

// The role each method needs, by full method path ("/roboloop.v1.RegistryService/SetAlias").
using MethodRoles = std::map<std::string, Role, std::less<>>;

// One caller of a tokens file.
struct TokenEntry {
  std::string name;    // who the caller is: recorded in alias history and leaderboard rows
  std::string sha256;  // 64 lowercase hex: SHA-256 of the caller's token
  Role role = Role::kRead;
};

// Reads and checks a tokens file. On any problem returns InvalidArgument (NotFound when the
// file cannot be read) naming the file and listing every problem, one per line: not a YAML
// mapping with a `tokens` list, an entry without name/sha256/role, a digest that is not 64
// lowercase hex, an unknown role, a repeated name or digest, an unknown key.
absl::StatusOr<std::vector<TokenEntry>> ReadTokensFile(const std::string& path);

}  // namespace roboloop::common
