// Status helpers and the project's error-handling macros (docs/architecture.md §5).
// absl 20220623 ships no status macros, so roboloop defines its own, prefixed ROBOLOOP_ to
// stay clear of glog's LOG/CHECK that every LibTorch translation unit sees.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace roboloop {

// Returns `status` with `context + ": "` prepended to its message; OK stays OK.
absl::Status Annotate(const absl::Status& status, const std::string& context);

// Returns absl::ErrnoToStatus-style status for `errno_value`, naming `what` (usually a path).
absl::Status ErrnoStatus(int errno_value, const std::string& what);

namespace internal {
// Prints a CHECK failure with its location and aborts. Never returns.
[[noreturn]] void CheckFailed(const char* file, int line, const char* condition,
                              const std::string& message);
}  // namespace internal

}  // namespace roboloop

#define ROBOLOOP_STATUS_CONCAT_INNER(a, b) a##b
#define ROBOLOOP_STATUS_CONCAT(a, b) ROBOLOOP_STATUS_CONCAT_INNER(a, b)

// Evaluates `expr` (an absl::Status); returns it from the enclosing function if not OK.
#define ROBOLOOP_RETURN_IF_ERROR(expr)                                      \
  do {                                                                      \
    ::absl::Status robo_status_ = (expr);                                   \
    if (!robo_status_.ok()) return robo_status_;                            \
  } while (0)

// Evaluates `rexpr` (an absl::StatusOr<T>); on error returns its status, else moves the
// value into `lhs` (a declaration such as `auto x` or an existing variable).
#define ROBOLOOP_ASSIGN_OR_RETURN(lhs, rexpr) \
  ROBOLOOP_ASSIGN_OR_RETURN_IMPL(ROBOLOOP_STATUS_CONCAT(robo_statusor_, __LINE__), lhs, rexpr)

#define ROBOLOOP_ASSIGN_OR_RETURN_IMPL(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                   \
  if (!statusor.ok()) return std::move(statusor).status();   \
  lhs = std::move(statusor).value()

// Aborts with a message when `condition` is false. For bugs only, never for bad input.
#define ROBOLOOP_CHECK(condition)                                                       \
  do {                                                                                  \
    if (!(condition)) ::roboloop::internal::CheckFailed(__FILE__, __LINE__, #condition, ""); \
  } while (0)

// As ROBOLOOP_CHECK, with an explanatory message (anything absl::StrCat accepts).
#define ROBOLOOP_CHECK_MSG(condition, ...)                                             \
  do {                                                                                 \
    if (!(condition))                                                                  \
      ::roboloop::internal::CheckFailed(__FILE__, __LINE__, #condition,                \
                                        ::absl::StrCat(__VA_ARGS__));                  \
  } while (0)
