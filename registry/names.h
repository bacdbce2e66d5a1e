// Validation of human-facing names (models, datasets, aliases, blob roles) and close-match
// suggestions for misses. All functions are thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace roboloop::registry {

// Accepts names of 1-100 characters from [a-z0-9._-], starting with a letter or digit and
// without "..". `kind` ("model", "dataset", "alias", "blob role") names the input in the
// InvalidArgument error, which also quotes the offending name and the rule.
absl::Status ValidateName(absl::string_view kind, absl::string_view name);

// Returns the Levenshtein distance between `a` and `b`.
int EditDistance(absl::string_view a, absl::string_view b);

// Returns up to `max_results` of `candidates` closest to `query` (edit distance at most
// max(2, |query|/3), or sharing it as a prefix), nearest first.
std::vector<std::string> CloseMatches(absl::string_view query,
                                      const std::vector<std::string>& candidates,
                                      size_t max_results = 5);

// Formats a "; close matches: a, b" suffix, or "" when there are none.
std::string CloseMatchesSuffix(absl::string_view query, const std::vector<std::string>& candidates);

}  // namespace roboloop::registry
