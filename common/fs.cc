#include "common/fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "absl/strings/escaping.h"
#include "absl/strings/str_split.h"
#include "common/ids.h"
#include "common/status.h"

namespace roboloop {

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

int UniqueFd::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

absl::Status WriteAll(int fd, absl::string_view data, const std::string& what) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(errno, absl::StrCat("cannot write ", what));
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::Status PwriteAll(int fd, absl::string_view data, int64_t offset, const std::string& what) {
  while (!data.empty()) {
    ssize_t n = ::pwrite(fd, data.data(), data.size(), offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(errno, absl::StrCat("cannot write ", what));
    data.remove_prefix(static_cast<size_t>(n));
    offset += n;
  }
  return absl::OkStatus();
}

absl::Status PreadSome(int fd, int64_t offset, size_t max_bytes, std::string* out,
                       const std::string& what) {
  out->resize(max_bytes);
  size_t filled = 0;
  while (filled < max_bytes) {
    ssize_t n = ::pread(fd, out->data() + filled, max_bytes - filled,
                        offset + static_cast<int64_t>(filled));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(errno, absl::StrCat("cannot read ", what));
    if (n == 0) break;
    filled += static_cast<size_t>(n);
  }
  out->resize(filled);
  return absl::OkStatus();
}

absl::Status FsyncFd(int fd, const std::string& what) {
  while (::fsync(fd) != 0) {
    if (errno != EINTR) return ErrnoStatus(errno, absl::StrCat("cannot fsync ", what));
  }
  return absl::OkStatus();
}

absl::Status FsyncDir(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(errno, absl::StrCat("cannot open directory ", dir));
  return FsyncFd(fd.get(), dir);
}

absl::Status RenameDurable(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return ErrnoStatus(errno, absl::StrCat("cannot rename ", from, " to ", to));
  }
  ROBOLOOP_RETURN_IF_ERROR(FsyncDir(ParentDir(to)));
  if (ParentDir(from) != ParentDir(to)) ROBOLOOP_RETURN_IF_ERROR(FsyncDir(ParentDir(from)));
  return absl::OkStatus();
}

std::string PartialPathFor(const std::string& path) { return absl::StrCat(path, ".partial-", NewUuid()); }

absl::Status ReplaceFolder(const std::string& partial, const std::string& folder) {
  if (!PathExists(folder)) return RenameDurable(partial, folder);
  const std::string aside = absl::StrCat(folder, ".replaced-", NewUuid());
  ROBOLOOP_RETURN_IF_ERROR(RenameDurable(folder, aside));
  const absl::Status placed = RenameDurable(partial, folder);
  if (!placed.ok()) {
    (void)RenameDurable(aside, folder);
    return placed;
  }
  std::error_code ignored;
  std::filesystem::remove_all(aside, ignored);
  return absl::OkStatus();
}

bool PathIsWithin(const std::string& path, const std::string& folder) {
  std::error_code error;
  const std::filesystem::path inner = std::filesystem::weakly_canonical(path, error);
  const std::filesystem::path outer = std::filesystem::weakly_canonical(folder, error);
  if (error) return false;
  auto inner_part = inner.begin();
  for (const std::filesystem::path& part : outer) {
    if (part.empty()) continue;  // the empty last element of a path ending in '/'
    if (inner_part == inner.end() || *inner_part != part) return false;
    ++inner_part;
  }
  return true;
}

absl::Status WriteFileAtomic(const std::string& path, absl::string_view data) {
  std::string temp = absl::StrCat(path, ".tmp-", NewUuid());
  UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd.valid()) return ErrnoStatus(errno, absl::StrCat("cannot create ", temp));
  absl::Status status = WriteAll(fd.get(), data, temp);
  if (status.ok()) status = FsyncFd(fd.get(), temp);
  fd = UniqueFd();
  if (status.ok()) status = RenameDurable(temp, path);
  if (!status.ok()) ::unlink(temp.c_str());
  return status;
}

absl::Status MakeDirs(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("MakeDirs: empty path");
  struct stat info;
  if (::stat(path.c_str(), &info) == 0) {
    if (S_ISDIR(info.st_mode)) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(path, " exists and is not a directory"));
  }
  std::string parent = ParentDir(path);
  if (parent != path && parent != "." && parent != "/") ROBOLOOP_RETURN_IF_ERROR(MakeDirs(parent));
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoStatus(errno, absl::StrCat("cannot create directory ", path));
  }
  return FsyncDir(parent);
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(errno, absl::StrCat("cannot open ", path));
  std::string content;
  std::string chunk;
  while (true) {
    ROBOLOOP_RETURN_IF_ERROR(
        PreadSome(fd.get(), static_cast<int64_t>(content.size()), 1 << 20, &chunk, path));
    if (chunk.empty()) break;
    content += chunk;
  }
  return content;
}

absl::StatusOr<int64_t> FileSize(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) return ErrnoStatus(errno, path);
  return static_cast<int64_t>(info.st_size);
}

bool PathExists(const std::string& path) {
  struct stat info;
  return ::lstat(path.c_str(), &info) == 0;
}

absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) {
  DIR* handle = ::opendir(dir.c_str());
  if (handle == nullptr) return ErrnoStatus(errno, absl::StrCat("cannot list ", dir));
  std::vector<std::string> names;
  while (struct dirent* entry = ::readdir(handle)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  ::closedir(handle);
  std::sort(names.begin(), names.end());
  return names;
}

absl::Status RemoveFile(const std::string& path) {
  if (::unlink(path.c_str()) != 0) return ErrnoStatus(errno, absl::StrCat("cannot remove ", path));
  return absl::OkStatus();
}

absl::Status MakeReadOnly(const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) return ErrnoStatus(errno, path);
  const mode_t writable = S_IWUSR | S_IWGRP | S_IWOTH;
  if ((info.st_mode & writable) == 0) return absl::OkStatus();
  if (chmod(path.c_str(), info.st_mode & 07777 & ~writable) != 0) {
    return ErrnoStatus(errno, absl::StrCat("cannot make ", path, " read-only"));
  }
  return absl::OkStatus();
}

absl::Status MakeOwnFileReadOnly(const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) return ErrnoStatus(errno, path);
  if (info.st_uid != geteuid() && geteuid() != 0) return absl::OkStatus();
  return MakeReadOnly(path);
}

std::string JoinPath(absl::string_view a, absl::string_view b) {
  if (a.empty()) return std::string(b);
  if (b.empty()) return std::string(a);
  bool a_slash = a.back() == '/';
  bool b_slash = b.front() == '/';
  if (a_slash && b_slash) return absl::StrCat(a, b.substr(1));
  if (a_slash || b_slash) return absl::StrCat(a, b);
  return absl::StrCat(a, "/", b);
}

std::string ParentDir(const std::string& path) {
  std::string trimmed = path;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  size_t slash = trimmed.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return trimmed.substr(0, slash);
}

absl::Status CheckSafeRelativePath(absl::string_view path) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("unsafe path \"", absl::CEscape(path), "\": ", why));
  };
  if (path.empty()) return bad("empty");
  if (path.find('\0') != absl::string_view::npos) return bad("contains a NUL byte");
  if (path.front() == '/') return bad("absolute paths are not allowed");
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part.empty()) return bad("empty path component");
    if (part == "..") return bad("'..' components are not allowed");
  }
  return absl::OkStatus();
}

}  // namespace roboloop
