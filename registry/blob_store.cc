#include "registry/blob_store.h"
#include "common/store_layout.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/ids.h"
#include "common/status.h"

namespace roboloop::registry {
namespace {

constexpr size_t kIoChunk = 1 << 20;

int64_t MtimeMicros(const struct stat& info) {
  return static_cast<int64_t>(info.st_mtim.tv_sec) * 1000000 + info.st_mtim.tv_nsec / 1000;
}

bool SameFile(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// Opens `path` and takes an exclusive flock on it, retrying until the locked descriptor still
// names `path` (another process may rename or unlink the file between open and flock).
absl::StatusOr<UniqueFd> OpenLocked(const std::string& path, int flags, bool blocking) {
  while (true) {
    UniqueFd fd(::open(path.c_str(), flags | O_CLOEXEC, 0644));
    if (!fd.valid()) return ErrnoStatus(errno, absl::StrCat("cannot open ", path));
    int lock_flags = LOCK_EX | (blocking ? 0 : LOCK_NB);
    while (::flock(fd.get(), lock_flags) != 0) {
      if (errno == EWOULDBLOCK && !blocking) {
        return absl::UnavailableError(absl::StrCat(path, " is locked by a live writer"));
      }
      if (errno != EINTR) return ErrnoStatus(errno, absl::StrCat("cannot lock ", path));
    }
    struct stat held, named;
    if (::fstat(fd.get(), &held) != 0) return ErrnoStatus(errno, path);
    if (::stat(path.c_str(), &named) == 0 && SameFile(held, named)) return fd;
    if ((flags & O_CREAT) == 0 && errno == ENOENT) {
      return absl::NotFoundError(absl::StrCat(path, " disappeared"));
    }
  }
}

absl::StatusOr<int64_t> FdSize(int fd, const std::string& what) {
  struct stat info;
  if (::fstat(fd, &info) != 0) return ErrnoStatus(errno, what);
  return static_cast<int64_t>(info.st_size);
}

absl::StatusOr<std::string> HashFd(int fd, const std::string& what) {
  Sha256 hasher;
  std::string chunk;
  int64_t offset = 0;
  while (true) {
    ROBOLOOP_RETURN_IF_ERROR(PreadSome(fd, offset, kIoChunk, &chunk, what));
    if (chunk.empty()) break;
    hasher.Update(chunk);
    offset += static_cast<int64_t>(chunk.size());
  }
  return hasher.HexDigest();
}

}  // namespace

absl::Status CheckSha256(absl::string_view sha256, absl::string_view what) {
  if (IsSha256Hex(sha256)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("invalid ", what, " \"", absl::CEscape(sha256),
                                                 "\": expected 64 lowercase hex characters"));
}

BlobReader::BlobReader(std::string sha256, std::string path, UniqueFd fd, int64_t blob_size,
                       int64_t offset, int64_t end)
    : sha256_(std::move(sha256)),
      path_(std::move(path)),
      fd_(std::move(fd)),
      blob_size_(blob_size),
      range_offset_(offset),
      range_end_(end),
      position_(offset),
      whole_blob_(offset == 0 && end == blob_size) {}

absl::Status BlobReader::CheckDigest() {
  digest_checked_ = true;
  std::string actual = hasher_.HexDigest();
  if (actual == sha256_) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat("blob ", sha256_, " is corrupt on disk (", path_,
                                          " hashes to ", actual, "); refusing to serve it"));
}

absl::StatusOr<std::string> BlobReader::Read(size_t max_bytes) {
  if (position_ >= range_end_) {
    if (whole_blob_ && !digest_checked_) ROBOLOOP_RETURN_IF_ERROR(CheckDigest());
    return std::string();
  }
  size_t want = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(max_bytes),
                                                      range_end_ - position_));
  std::string chunk;
  ROBOLOOP_RETURN_IF_ERROR(PreadSome(fd_.get(), position_, want, &chunk, path_));
  if (chunk.empty()) {
    return absl::DataLossError(
        absl::StrCat("blob ", sha256_, " is shorter on disk than its recorded size ", blob_size_));
  }
  position_ += static_cast<int64_t>(chunk.size());
  if (whole_blob_) {
    hasher_.Update(chunk);
    if (position_ == range_end_) ROBOLOOP_RETURN_IF_ERROR(CheckDigest());
  }
  return chunk;
}

BlobStore::BlobStore(std::string root)
    : root_(std::move(root)),
      blobs_dir_(StoreLayout(root_).RegistryBlobs()),
      partial_dir_(JoinPath(root_, "partial")),
      tmp_dir_(JoinPath(root_, "tmp")) {}

absl::StatusOr<std::unique_ptr<BlobStore>> BlobStore::Create(const Options& options) {
  if (options.root.empty()) return absl::InvalidArgumentError("blob store root is empty");
  std::unique_ptr<BlobStore> store(new BlobStore(options.root));
  for (const std::string& dir : {store->blobs_dir_, store->partial_dir_, store->tmp_dir_}) {
    ROBOLOOP_RETURN_IF_ERROR(Annotate(MakeDirs(dir), "opening blob store"));
  }
  ROBOLOOP_RETURN_IF_ERROR(store->CleanTempFiles());
  return store;
}

absl::Status BlobStore::CleanTempFiles() {
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(tmp_dir_));
  for (const std::string& name : names) {
    std::string path = JoinPath(tmp_dir_, name);
    absl::StatusOr<UniqueFd> fd = OpenLocked(path, O_RDONLY, /*blocking=*/false);
    if (absl::IsUnavailable(fd.status()) || absl::IsNotFound(fd.status())) continue;
    ROBOLOOP_RETURN_IF_ERROR(fd.status());
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return ErrnoStatus(errno, absl::StrCat("cannot remove stale temp file ", path));
    }
  }
  return absl::OkStatus();
}

std::string BlobStore::BlobPath(absl::string_view sha256) const {
  return absl::StrCat(blobs_dir_, "/", sha256.substr(0, 2), "/", sha256.substr(2, 2), "/",
                      sha256);
}

std::string BlobStore::PartialPath(absl::string_view sha256) const {
  return JoinPath(partial_dir_, sha256);
}

absl::StatusOr<PutResult> BlobStore::PublishTemp(const std::string& temp_path,
                                                 const std::string& sha256, int64_t size) {
  PutResult result{sha256, size, false};
  std::string final_path = BlobPath(sha256);
  if (PathExists(final_path)) {
    result.already_present = true;
    ::unlink(temp_path.c_str());
    return result;
  }
  ::chmod(temp_path.c_str(), 0444);
  ROBOLOOP_RETURN_IF_ERROR(MakeDirs(ParentDir(final_path)));
  ROBOLOOP_RETURN_IF_ERROR(RenameDurable(temp_path, final_path));
  return result;
}

absl::StatusOr<PutResult> BlobStore::StoreStream(
    const std::function<absl::StatusOr<std::string>()>& next_chunk) {
  std::string temp_path = JoinPath(tmp_dir_, NewUuid());
  ROBOLOOP_ASSIGN_OR_RETURN(UniqueFd fd,
                            OpenLocked(temp_path, O_WRONLY | O_CREAT | O_EXCL, true));
  auto write_all = [&]() -> absl::StatusOr<PutResult> {
    Sha256 hasher;
    int64_t size = 0;
    while (true) {
      ROBOLOOP_ASSIGN_OR_RETURN(std::string chunk, next_chunk());
      if (chunk.empty()) break;
      hasher.Update(chunk);
      ROBOLOOP_RETURN_IF_ERROR(WriteAll(fd.get(), chunk, temp_path));
      size += static_cast<int64_t>(chunk.size());
    }
    ROBOLOOP_RETURN_IF_ERROR(FsyncFd(fd.get(), temp_path));
    return PublishTemp(temp_path, hasher.HexDigest(), size);
  };
  absl::StatusOr<PutResult> result = write_all();
  if (!result.ok()) ::unlink(temp_path.c_str());
  return result;
}

absl::StatusOr<PutResult> BlobStore::Put(absl::string_view data) {
  size_t offset = 0;
  return StoreStream([&]() -> absl::StatusOr<std::string> {
    std::string chunk(data.substr(offset, kIoChunk));
    offset += chunk.size();
    return chunk;
  });
}

absl::StatusOr<PutResult> BlobStore::PutFile(const std::string& path) {
  UniqueFd source(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!source.valid()) return ErrnoStatus(errno, absl::StrCat("cannot open ", path));
  int64_t offset = 0;
  return StoreStream([&]() -> absl::StatusOr<std::string> {
    std::string chunk;
    ROBOLOOP_RETURN_IF_ERROR(PreadSome(source.get(), offset, kIoChunk, &chunk, path));
    offset += static_cast<int64_t>(chunk.size());
    return chunk;
  });
}

absl::StatusOr<BlobStat> BlobStore::Stat(absl::string_view sha256) const {
  ROBOLOOP_RETURN_IF_ERROR(CheckSha256(sha256));
  struct stat info;
  if (::stat(BlobPath(sha256).c_str(), &info) != 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat("blob ", sha256, " is not stored"));
    return ErrnoStatus(errno, BlobPath(sha256));
  }
  return BlobStat{std::string(sha256), static_cast<int64_t>(info.st_size), MtimeMicros(info)};
}

bool BlobStore::Contains(absl::string_view sha256) const {
  return IsSha256Hex(sha256) && PathExists(BlobPath(sha256));
}

absl::StatusOr<int64_t> BlobStore::BytesHeld(absl::string_view sha256) const {
  ROBOLOOP_RETURN_IF_ERROR(CheckSha256(sha256));
  absl::StatusOr<int64_t> size = FileSize(PartialPath(sha256));
  if (absl::IsNotFound(size.status())) return 0;
  return size;
}

absl::Status BlobStore::Append(absl::string_view sha256, int64_t declared_size, int64_t offset,
                               absl::string_view data) {
  ROBOLOOP_RETURN_IF_ERROR(CheckSha256(sha256));
  if (declared_size < 0 || offset < 0) {
    return absl::InvalidArgumentError(absl::StrCat("upload of ", sha256, ": negative size ",
                                                   declared_size, " or offset ", offset));
  }
  if (Contains(sha256)) {
    return absl::AlreadyExistsError(absl::StrCat("blob ", sha256, " is already stored"));
  }
  int64_t end = offset + static_cast<int64_t>(data.size());
  if (end > declared_size) {
    return absl::OutOfRangeError(absl::StrCat("upload of ", sha256, " is oversized: ", end,
                                              " bytes sent, ", declared_size, " declared"));
  }
  std::string path = PartialPath(sha256);
  ROBOLOOP_ASSIGN_OR_RETURN(UniqueFd fd, OpenLocked(path, O_WRONLY | O_CREAT, true));
  ROBOLOOP_ASSIGN_OR_RETURN(int64_t held, FdSize(fd.get(), path));
  if (held != offset) {
    return absl::FailedPreconditionError(absl::StrCat("upload of ", sha256, " resumes at offset ",
                                                      offset, " but the store holds ", held,
                                                      " bytes"));
  }
  return PwriteAll(fd.get(), data, offset, path);
}

absl::StatusOr<PutResult> BlobStore::Finish(absl::string_view sha256, int64_t declared_size,
                                            absl::string_view streamed_digest) {
  ROBOLOOP_RETURN_IF_ERROR(CheckSha256(sha256));
  std::string path = PartialPath(sha256);
  std::string sha(sha256);
  if (Contains(sha256)) {
    ROBOLOOP_RETURN_IF_ERROR(Abort(sha256));
    ROBOLOOP_ASSIGN_OR_RETURN(BlobStat stat, Stat(sha256));
    return PutResult{sha, stat.size, true};
  }
  absl::StatusOr<UniqueFd> fd = OpenLocked(path, O_RDWR, true);
  if (absl::IsNotFound(fd.status())) {
    if (Contains(sha256)) return Finish(sha256, declared_size, streamed_digest);
    return absl::FailedPreconditionError(
        absl::StrCat("upload of ", sha, " is truncated: 0 of ", declared_size, " bytes received"));
  }
  ROBOLOOP_RETURN_IF_ERROR(fd.status());
  ROBOLOOP_ASSIGN_OR_RETURN(int64_t held, FdSize(fd->get(), path));
  if (held < declared_size) {
    return absl::FailedPreconditionError(absl::StrCat(
        "upload of ", sha, " is truncated: ", held, " of ", declared_size, " bytes received"));
  }
  if (held > declared_size) {
    return absl::OutOfRangeError(absl::StrCat("upload of ", sha, " is oversized: holds ", held,
                                              " bytes, ", declared_size,
                                              " declared; abort and restart it"));
  }
  std::string actual(streamed_digest);
  if (actual.empty()) {
    ROBOLOOP_ASSIGN_OR_RETURN(actual, HashFd(fd->get(), path));
  }
  if (actual != sha) {
    ::unlink(path.c_str());
    return absl::DataLossError(absl::StrCat("upload of ", sha, " hashes to ", actual,
                                            "; the upload was discarded"));
  }
  ROBOLOOP_RETURN_IF_ERROR(FsyncFd(fd->get(), path));
  return PublishTemp(path, sha, held);
}

absl::Status BlobStore::Abort(absl::string_view sha256) {
  ROBOLOOP_RETURN_IF_ERROR(CheckSha256(sha256));
  std::string path = PartialPath(sha256);
  absl::StatusOr<UniqueFd> fd = OpenLocked(path, O_RDONLY, true);
  if (absl::IsNotFound(fd.status())) return absl::OkStatus();
  ROBOLOOP_RETURN_IF_ERROR(fd.status());
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoStatus(errno, absl::StrCat("cannot remove ", path));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<PartialUpload>> BlobStore::ListPartials() const {
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(partial_dir_));
  std::vector<PartialUpload> partials;
  for (const std::string& name : names) {
    struct stat info;
    if (!IsSha256Hex(name) || ::stat(PartialPath(name).c_str(), &info) != 0) continue;
    partials.push_back({name, static_cast<int64_t>(info.st_size), MtimeMicros(info)});
  }
  return partials;
}

absl::StatusOr<std::unique_ptr<BlobReader>> BlobStore::OpenReader(absl::string_view sha256,
                                                                  int64_t offset,
                                                                  int64_t length) const {
  ROBOLOOP_RETURN_IF_ERROR(CheckSha256(sha256));
  std::string path = BlobPath(sha256);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat("blob ", sha256, " is not stored"));
    return ErrnoStatus(errno, absl::StrCat("cannot open ", path));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(int64_t size, FdSize(fd.get(), path));
  if (offset < 0 || length < 0 || offset > size || (length > 0 && offset + length > size)) {
    return absl::OutOfRangeError(absl::StrCat("range offset ", offset, " length ", length,
                                              " exceeds blob ", sha256, " of ", size, " bytes"));
  }
  int64_t end = length == 0 ? size : offset + length;
  if (offset != 0 || end != size) ROBOLOOP_RETURN_IF_ERROR(Verify(sha256));
  return std::unique_ptr<BlobReader>(
      new BlobReader(std::string(sha256), path, std::move(fd), size, offset, end));
}

absl::StatusOr<std::string> BlobStore::ReadAll(absl::string_view sha256) const {
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<BlobReader> reader, OpenReader(sha256));
  std::string content;
  while (true) {
    ROBOLOOP_ASSIGN_OR_RETURN(std::string chunk, reader->Read(kIoChunk));
    if (chunk.empty()) break;
    content += chunk;
  }
  return content;
}

absl::Status BlobStore::Verify(absl::string_view sha256) const {
  ROBOLOOP_RETURN_IF_ERROR(CheckSha256(sha256));
  absl::StatusOr<std::string> actual = Sha256File(BlobPath(sha256));
  if (absl::IsNotFound(actual.status())) {
    return absl::NotFoundError(absl::StrCat("blob ", sha256, " is missing"));
  }
  ROBOLOOP_RETURN_IF_ERROR(actual.status());
  if (*actual == sha256) return absl::OkStatus();
  return absl::DataLossError(
      absl::StrCat("blob ", sha256, " is corrupt on disk: its content hashes to ", *actual));
}

absl::StatusOr<std::vector<BlobStat>> BlobStore::List() const {
  std::vector<BlobStat> blobs;
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::string> level1, ListDir(blobs_dir_));
  for (const std::string& a : level1) {
    absl::StatusOr<std::vector<std::string>> level2 = ListDir(JoinPath(blobs_dir_, a));
    if (!level2.ok()) continue;
    for (const std::string& b : *level2) {
      absl::StatusOr<std::vector<std::string>> names = ListDir(JoinPath(JoinPath(blobs_dir_, a), b));
      if (!names.ok()) continue;
      for (const std::string& name : *names) {
        if (!IsSha256Hex(name) || name.substr(0, 2) != a || name.substr(2, 2) != b) continue;
        absl::StatusOr<BlobStat> stat = Stat(name);
        if (stat.ok()) blobs.push_back(*std::move(stat));
      }
    }
  }
  return blobs;
}

absl::Status BlobStore::Remove(absl::string_view sha256) {
  ROBOLOOP_RETURN_IF_ERROR(CheckSha256(sha256));
  std::string path = BlobPath(sha256);
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat("blob ", sha256, " is not stored"));
    return ErrnoStatus(errno, absl::StrCat("cannot remove ", path));
  }
  return FsyncDir(ParentDir(path));
}

}  // namespace roboloop::registry
