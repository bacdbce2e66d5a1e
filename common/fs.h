// Durable file helpers: atomic writes (temp + fsync + rename + directory fsync), directory
// creation, whole-file reads and path-safety checks. All functions are thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace roboloop {

// Owns a POSIX file descriptor and closes it on destruction. Move-only.
class UniqueFd {
 public:
  // Holds nothing (get() == -1).
  UniqueFd() = default;
  // Takes ownership of `fd` (may be -1).
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd();
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  // The descriptor, or -1.
  int get() const { return fd_; }
  // True when a descriptor is held.
  bool valid() const { return fd_ >= 0; }
  // Gives up ownership and returns the descriptor.
  int release();

 private:
  int fd_ = -1;
};

// Writes all of `data` to `fd` at its current offset, retrying short writes; `what` names the file.
absl::Status WriteAll(int fd, absl::string_view data, const std::string& what);

// Writes all of `data` to `fd` at `offset` (pwrite), retrying short writes.
absl::Status PwriteAll(int fd, absl::string_view data, int64_t offset, const std::string& what);

// Reads up to `max_bytes` from `fd` at `offset` into `out` (resized to what was read).
absl::Status PreadSome(int fd, int64_t offset, size_t max_bytes, std::string* out,
                       const std::string& what);

// fsyncs `fd`; `what` names the file in errors.
absl::Status FsyncFd(int fd, const std::string& what);

// fsyncs the directory `dir` so that entries created or renamed in it are durable.
absl::Status FsyncDir(const std::string& dir);

// Renames `from` to `to` atomically (replacing `to`), then fsyncs the directory of `to`.
absl::Status RenameDurable(const std::string& from, const std::string& to);

// A fresh name beside `path` to write it under before an atomic rename: "<path>.partial-<uuid>".
// Unique, so that concurrent writers and a user's own file named "<path>.partial" are never touched.
std::string PartialPathFor(const std::string& path);

// Puts the folder `partial` in place of `folder`: an existing `folder` is moved aside first, put back when the
// second rename fails, and deleted once `partial` is in place. Errors name the paths.
absl::Status ReplaceFolder(const std::string& partial, const std::string& folder);

// True when `path` is `folder` or lies inside it, after resolving both (symbolic links, "." and "..").
bool PathIsWithin(const std::string& path, const std::string& folder);

// Replaces the file at `path` with `data` atomically and durably: a crash leaves either the
// old content or the new one, never a mix. The temp file lives beside `path`.
absl::Status WriteFileAtomic(const std::string& path, absl::string_view data);

// Creates `path` and any missing parents (mode 0755); existing directories are fine.
absl::Status MakeDirs(const std::string& path);

// Returns the whole content of the file at `path`; NotFound when it does not exist.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Returns the size in bytes of the file at `path`; NotFound when it does not exist.
absl::StatusOr<int64_t> FileSize(const std::string& path);

// True when something exists at `path`.
bool PathExists(const std::string& path);

// Returns the entry names in directory `dir` (without "." and ".."), sorted.
absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir);

// Removes the file at `path`; NotFound when it does not exist.
absl::Status RemoveFile(const std::string& path);

// Takes every write permission off the file at `path` (its other mode bits kept); a file without
// any is left alone. Errors name the path.
absl::Status MakeReadOnly(const std::string& path);

// MakeReadOnly for a file found in a cache that several users may share: a file another user
// owns (only they may change its mode) is left as it is.
absl::Status MakeOwnFileReadOnly(const std::string& path);

// Joins two path parts with exactly one '/' between them.
std::string JoinPath(absl::string_view a, absl::string_view b);

// Returns the directory part of `path` ("." when it has none).
std::string ParentDir(const std::string& path);

// Accepts a relative path that stays inside its base directory: non-empty, not absolute, no
// ".." component, no NUL byte, no empty component. InvalidArgument names the path otherwise.
absl::Status CheckSafeRelativePath(absl::string_view path);

}  // namespace roboloop
