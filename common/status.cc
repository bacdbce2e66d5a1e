#include "common/status.h"

#include <cstring>

namespace roboloop {

absl::Status Annotate(const absl::Status& status, const std::string& context) {
  if (status.ok()) return status;
  absl::Status annotated(status.code(), absl::StrCat(context, ": ", status.message()));
  status.ForEachPayload([&annotated](absl::string_view type_url, const absl::Cord& payload) {
    annotated.SetPayload(type_url, payload);
  });
  return annotated;
}

absl::Status ErrnoStatus(int errno_value, const std::string& what) {
  absl::Status base = absl::ErrnoToStatus(errno_value, "");
  return absl::Status(base.code(), absl::StrCat(what, ": ", std::strerror(errno_value)));
}

namespace internal {

void CheckFailed(const char* file, int line, const char* condition, const std::string& message) {
  std::fprintf(stderr, "roboloop CHECK failed at %s:%d: %s %s\n", file, line, condition,
               message.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace internal
}  // namespace roboloop
