#include "registry/names.h"

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace roboloop::registry {
namespace {

constexpr size_t kMaxNameLength = 100;

bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

bool IsNameChar(char c) { return IsNameStart(c) || c == '.' || c == '_' || c == '-'; }

}  // namespace

absl::Status ValidateName(absl::string_view kind, absl::string_view name) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid ", kind, " name \"", absl::Utf8SafeCEscape(name), "\": ", why,
        " (names are 1-100 characters of a-z, 0-9, '.', '_', '-', starting with a letter or "
        "digit)"));
  };
  if (name.empty()) return bad("empty");
  if (name.size() > kMaxNameLength) return bad("too long");
  if (!IsNameStart(name.front())) return bad("must start with a lowercase letter or digit");
  for (char c : name) {
    if (static_cast<unsigned char>(c) >= 0x80) return bad("non-ASCII characters are not allowed");
    if (!IsNameChar(c)) return bad(absl::StrCat("character '", absl::CEscape(std::string(1, c)),
                                                "' is not allowed"));
  }
  if (absl::StrContains(name, "..")) return bad("\"..\" is not allowed");
  return absl::OkStatus();
}

int EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<int> previous(b.size() + 1);
  std::vector<int> current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      int substitute = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitute});
    }
    std::swap(previous, current);
  }
  return previous[b.size()];
}

std::vector<std::string> CloseMatches(absl::string_view query,
                                      const std::vector<std::string>& candidates,
                                      size_t max_results) {
  int threshold = std::max<int>(2, static_cast<int>(query.size()) / 3);
  std::vector<std::pair<int, std::string>> scored;
  for (const std::string& candidate : candidates) {
    int distance = EditDistance(query, candidate);
    bool prefix = !query.empty() && absl::StartsWith(candidate, query);
    if (distance <= threshold || prefix) scored.emplace_back(prefix ? 0 : distance, candidate);
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> result;
  for (auto& [distance, candidate] : scored) {
    if (result.size() == max_results) break;
    result.push_back(std::move(candidate));
  }
  return result;
}

std::string CloseMatchesSuffix(absl::string_view query, const std::vector<std::string>& candidates) {
  std::vector<std::string> close = CloseMatches(query, candidates);
  if (close.empty()) return "";
  return absl::StrCat("; close matches: ", absl::StrJoin(close, ", "));
}

}  // namespace roboloop::registry
