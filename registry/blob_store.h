// Content-addressed blob store: each blob lives under root/blobs/ab/cd/<sha256>, named by the
// sha256 of its content. Writes go to a temp file, are fsynced and renamed atomically into
// place (then the directory is fsynced), so a crash never leaves a partial blob under its
// final name. Resumable uploads grow root/partial/<sha256> and become visible only after
// their size and hash are checked.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/fs.h"
#include "common/sha256.h"

namespace roboloop::registry {

// A stored blob: its hash, size and modification time.
struct BlobStat {
  std::string sha256;         // lowercase hex of the content
  int64_t size = 0;           // bytes
  int64_t mtime_unix_us = 0;  // when it was stored
};

// A resumable upload in progress under root/partial/.
struct PartialUpload {
  std::string sha256;         // the hash the finished content must have
  int64_t bytes_held = 0;     // bytes received so far
  int64_t mtime_unix_us = 0;  // time of the last append
};

// Outcome of storing content.
struct PutResult {
  std::string sha256;            // lowercase hex of the content
  int64_t size = 0;              // bytes
  bool already_present = false;  // identical content was stored before; nothing was written
};

// Reads a byte range of one blob. Not thread-safe: one caller at a time.
class BlobReader {
 public:
  // Returns the next up-to-`max_bytes` bytes of the range, or "" once the range is exhausted.
  // When the range is the whole blob, the chunk that reaches the end is returned only after the
  // content's hash matched the blob's name; a blob altered on disk gives DataLoss instead.
  absl::StatusOr<std::string> Read(size_t max_bytes);
  // The whole blob's size in bytes.
  int64_t blob_size() const { return blob_size_; }
  // First byte of the range.
  int64_t range_offset() const { return range_offset_; }
  // Bytes in the range.
  int64_t range_length() const { return range_end_ - range_offset_; }

 private:
  friend class BlobStore;
  BlobReader(std::string sha256, std::string path, UniqueFd fd, int64_t blob_size,
             int64_t offset, int64_t end);
  absl::Status CheckDigest();

  std::string sha256_;
  std::string path_;
  UniqueFd fd_;
  int64_t blob_size_;
  int64_t range_offset_;
  int64_t range_end_;
  int64_t position_;
  bool whole_blob_;
  bool digest_checked_ = false;
  Sha256 hasher_;
};

// The blob store. Thread-safe: it keeps no mutable state in memory; concurrent writers (threads
// or processes sharing one root) coordinate through flock on temp and partial files.
class BlobStore {
 public:
  struct Options {
    std::string root;  // directory holding blobs/, partial/ and tmp/ (created when missing)
  };

  // Opens (creating when missing) the store at options.root and removes temp files left by
  // writers that died; temp files of live writers (locked) are kept.
  static absl::StatusOr<std::unique_ptr<BlobStore>> Create(const Options& options);

  // Stores `data`; identical content already stored is not written again.
  absl::StatusOr<PutResult> Put(absl::string_view data);
  // Stores the content of the file at `path` (streamed).
  absl::StatusOr<PutResult> PutFile(const std::string& path);

  // Returns the stored blob's size and time; NotFound when absent.
  absl::StatusOr<BlobStat> Stat(absl::string_view sha256) const;
  // True when the blob is stored (a malformed hash is simply absent).
  bool Contains(absl::string_view sha256) const;

  // Bytes a partial upload for `sha256` holds (0 when none).
  absl::StatusOr<int64_t> BytesHeld(absl::string_view sha256) const;
  // Appends `data` to the partial upload of `sha256`, declared to total `declared_size` bytes.
  // `offset` must equal BytesHeld (FailedPrecondition otherwise, naming both); data beyond
  // `declared_size` is refused (OutOfRange, "oversized") and nothing is written. AlreadyExists
  // when the blob is stored already.
  absl::Status Append(absl::string_view sha256, int64_t declared_size, int64_t offset,
                      absl::string_view data);
  // Makes the partial upload visible as a blob after checking its size equals `declared_size`
  // (fewer bytes: FailedPrecondition "truncated", the partial is kept for resuming) and its
  // hash equals `sha256` (DataLoss; the partial is discarded). If the blob is already stored,
  // any partial is dropped and already_present is set. `streamed_digest`, when not empty, is
  // the sha256 the caller computed over every byte it appended from offset 0 in one session;
  // it replaces re-reading the partial file to hash it.
  absl::StatusOr<PutResult> Finish(absl::string_view sha256, int64_t declared_size,
                                   absl::string_view streamed_digest = "");
  // Discards the partial upload of `sha256`; OK when there is none.
  absl::Status Abort(absl::string_view sha256);
  // Lists partial uploads in progress.
  absl::StatusOr<std::vector<PartialUpload>> ListPartials() const;

  // Opens bytes [offset, offset + length) of a blob; length 0 means "to the end". A range short
  // of the whole blob is served only after the whole blob was verified (DataLoss otherwise).
  // NotFound when absent, OutOfRange when the range exceeds the blob.
  absl::StatusOr<std::unique_ptr<BlobReader>> OpenReader(absl::string_view sha256,
                                                         int64_t offset = 0,
                                                         int64_t length = 0) const;
  // Returns the whole verified content of a blob (for small blobs).
  absl::StatusOr<std::string> ReadAll(absl::string_view sha256) const;
  // Re-hashes a stored blob: OK, NotFound, or DataLoss naming the hash it has now.
  absl::Status Verify(absl::string_view sha256) const;
  // Lists every stored blob, sorted by hash.
  absl::StatusOr<std::vector<BlobStat>> List() const;
  // Deletes a stored blob (for garbage collection); NotFound when absent.
  absl::Status Remove(absl::string_view sha256);

  // Path of the blob's final file (whether or not it exists). `sha256` must be valid.
  std::string BlobPath(absl::string_view sha256) const;
  // Path of the blob's partial-upload file.
  std::string PartialPath(absl::string_view sha256) const;
  // The store's root directory.
  const std::string& root() const { return root_; }

 private:
  explicit BlobStore(std::string root);
  absl::Status CleanTempFiles();
  absl::StatusOr<PutResult> PublishTemp(const std::string& temp_path, const std::string& sha256,
                                        int64_t size);
  absl::StatusOr<PutResult> StoreStream(
      const std::function<absl::StatusOr<std::string>()>& next_chunk);

  const std::string root_;
  const std::string blobs_dir_;
  const std::string partial_dir_;
  const std::string tmp_dir_;
};

// InvalidArgument unless `sha256` is 64 lowercase hex characters; `what` names the input.
absl::Status CheckSha256(absl::string_view sha256, absl::string_view what = "sha256");

}  // namespace roboloop::registry
