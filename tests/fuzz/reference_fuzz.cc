// Fuzz target: registry references (registry/reference.h). Any text either parses into a
// reference that keeps the documented shape or is refused with InvalidArgument.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/ascii.h"
#include "registry/reference.h"

namespace {

using roboloop::registry::ParsedReference;

bool IsLowerHex(const std::string& text) {
  for (char c : text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c)) && (c < 'a' || c > 'f')) return false;
  }
  return true;
}

// The contract of ParseReference's result (registry/reference.h).
bool WellFormed(const ParsedReference& ref) {
  switch (ref.form) {
    case ParsedReference::Form::kIdPrefix:
      return ref.id_prefix.size() >= roboloop::registry::kMinIdPrefix && ref.id_prefix.size() <= 64 &&
             IsLowerHex(ref.id_prefix);
    case ParsedReference::Form::kVersion:
      return !ref.name.empty() && ref.version >= 1;
    case ParsedReference::Form::kAlias:
      return !ref.name.empty() && !ref.alias.empty();
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<ParsedReference> ref = roboloop::registry::ParseReference(text);
  if (ref.ok() && !WellFormed(*ref)) std::abort();
  if (!ref.ok() && !absl::IsInvalidArgument(ref.status())) std::abort();
  return 0;
}
