// Thin, Status-returning wrappers over the HDF5 C API used by the data module (module
// internal; tests may use it to build broken files). HDF5 1.10 here is the thread-safe build
// with one global lock: calls are safe from any thread but never run in parallel.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "data/array.h"
#include "data/dtype.h"
#include "data/storage_options.h"
#include "hdf5.h"

namespace roboloop::data::h5 {

// Owns one HDF5 identifier (file, group, dataset, dataspace, datatype, attribute or property
// list) and closes it with the matching H5*close. Move-only.
class Handle {
 public:
  Handle() = default;
  // Takes ownership of `id` (negative ids are held as invalid).
  explicit Handle(hid_t id) : id_(id) {}
  ~Handle();
  Handle(Handle&& other) noexcept : id_(other.id_) { other.id_ = -1; }
  Handle& operator=(Handle&& other) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  // The raw identifier.
  hid_t get() const { return id_; }
  // Gives up ownership and returns the identifier (-1 when none was held).
  hid_t release() {
    const hid_t id = id_;
    id_ = -1;
    return id;
  }

 private:
  hid_t id_ = -1;
};

// What a path inside a file names.
enum class ObjectKind { kMissing, kGroup, kDataset, kOther };

// Returns an error `what: <fallback> (HDF5: <innermost message>)` built from this thread's
// HDF5 error stack. When a frame carries the system errno of a failed read or write, the
// message also gives its text ("No space left on device") and the code follows the errno
// (ENOSPC: ResourceExhausted); otherwise the code is Internal.
absl::Status ErrorFromStack(const std::string& what, const std::string& fallback);

// Closes the HDF5 file `file`, writing what HDF5 still holds in memory; an error (e.g. no
// space left) names `path`. The handle is given up either way (after a failed close HDF5 may keep the file
// open until the process ends; the caller discards the file).
absl::Status CloseFile(Handle file, const std::string& path);

// Opens an existing HDF5 file read-only or read-write; a missing or non-HDF5 file or a folder is
// an error naming `path` ("is a folder, expected an HDF5 file").
absl::StatusOr<Handle> OpenFile(const std::string& path, bool writable);

// Creates (truncating) an HDF5 file at `path`.
absl::StatusOr<Handle> CreateFile(const std::string& path);

// Kind of object at `path` relative to `loc` (intermediate groups may be missing).
ObjectKind KindOf(hid_t loc, const std::string& path);

// Opens the group at `path`; `display` names it in errors.
absl::StatusOr<Handle> OpenGroup(hid_t loc, const std::string& path, const std::string& display);

// Opens the dataset at `path`; `display` names it in errors. A virtual dataset or one stored in
// external raw files is refused (InvalidArgument): a dataset file must hold its own values.
absl::StatusOr<Handle> OpenDataset(hid_t loc, const std::string& path,
                                   const std::string& display);

// OK when every link in `file` stays inside it (hard and soft links); otherwise InvalidArgument
// naming the first external or user-defined link and its target, e.g. "data/demo_1/actions:
// external link to d.hdf5:/data/demo_1/actions (a dataset file must be self-contained: ...)".
absl::Status CheckNoExternalLinks(hid_t file);

// Opens the group at `path`, creating it and any missing parents.
absl::StatusOr<Handle> EnsureGroup(hid_t loc, const std::string& path);

// Names of the direct children of the group `group`, in HDF5's name order.
absl::StatusOr<std::vector<std::string>> ListChildren(hid_t group, const std::string& display);

// Deletes the link `path` under `loc` when it exists.
absl::Status DeleteIfExists(hid_t loc, const std::string& path);

// Dtype and full shape of a dataset.
struct DatasetShape {
  DType dtype = DType::kFloat32;  // element type as stored
  std::vector<int64_t> dims;      // full shape
};

// Describes dataset `dataset`; unsupported element types are errors naming `display`.
absl::StatusOr<DatasetShape> Describe(hid_t dataset, const std::string& display);

// Reads rows [first, first + count) of `dataset` as `dtype` into `out`, which must hold
// `count` full rows. From a dataset laid out as ImageStorage() lays out image keys
// (frame_chunks.h FrameChunkLevel), uint8 rows are read chunk by chunk and inflated on several
// threads; anything else goes through HDF5's pipeline (ReadRowsThroughPipeline).
absl::Status ReadRows(hid_t dataset, DType dtype, int64_t first, int64_t count, void* out,
                      const std::string& display);

// ReadRows through HDF5's own filters and type conversion, whatever the layout.
absl::Status ReadRowsThroughPipeline(hid_t dataset, DType dtype, int64_t first, int64_t count, void* out,
                                     const std::string& display);

// Deflate expands data at most 1032-fold, so a dataset whose values would take more than this
// many times its stored bytes is damaged (or claims chunks it never wrote).
inline constexpr int64_t kMaxStoredExpansion = 1100;
// Datasets up to this size are read whatever they store (fill values of small unwritten ones).
inline constexpr int64_t kUncheckedDatasetBytes = int64_t{1} << 20;

// DataLoss naming `display` when `shape` (of `dataset`) overflows 64 bits in bytes, or when it
// declares more than kUncheckedDatasetBytes and more than kMaxStoredExpansion times the bytes
// the file stores for it: what a damaged file claims, checked before any allocation.
absl::Status CheckDeclaredSize(hid_t dataset, const DatasetShape& shape, const std::string& display);

// Reads a whole dataset into an Array of its stored dtype (through ReadRows unless rank 0).
// Errors: CheckDeclaredSize's, and the read's.
absl::StatusOr<Array> ReadArray(hid_t dataset, const std::string& display);

// Creates a chunked dataset [0, step_shape...] with an unlimited first dimension; chunks hold
// max(storage.chunk_steps, first_rows) rows (the rows of the first block to be appended),
// shrunk to stay below storage.max_chunk_bytes, or one row with storage.chunk_per_step.
// `first_block` (its first rows, when known) decides whether compression pays
// (StorageOptions::min_compression_saving), judged on its first row with chunk_per_step (one
// frame), else on its first kCompressionProbeBytes. Compression is shuffle + deflate (deflate alone for
// one-byte elements, where shuffle changes nothing).
absl::StatusOr<Handle> CreateExtensible(hid_t loc, const std::string& name, DType dtype,
                                        const std::vector<int64_t>& step_shape,
                                        int64_t first_rows, const StorageOptions& storage,
                                        const Array* first_block = nullptr);

// How much of a first block ShuffleDeflateRatio compresses to decide whether deflate pays.
inline constexpr int64_t kCompressionProbeBytes = int64_t{1} << 20;

// Size of `bytes` after HDF5's shuffle filter (element size `element_bytes`) and deflate at
// `level`, over its first `probe_bytes` at most, as a fraction of the input (1 = no gain).
double ShuffleDeflateRatio(const std::vector<uint8_t>& bytes, int64_t element_bytes, int level,
                           int64_t probe_bytes = kCompressionProbeBytes);

// Grows the first dimension of the extensible `dataset` by `rows`; returns the rows it had.
absl::StatusOr<int64_t> ExtendRows(hid_t dataset, int64_t rows, const std::string& display);

// Appends the rows of `block` (shape [n, step_shape...] matching the dataset) at the end. To a
// dataset laid out as ImageStorage() lays out image keys (frame_chunks.h FrameChunkLevel), uint8
// rows are compressed by `frame_threads` threads (0: frame_codec.h's default) and written chunk
// by chunk; anything else goes through HDF5's pipeline.
absl::Status AppendRows(hid_t dataset, const Array& block, const std::string& display,
                        int frame_threads = 0);

// Writes `array` as a new fixed-size dataset `name` (chunked and compressed when non-empty).
absl::Status WriteArray(hid_t loc, const std::string& name, const Array& array,
                        const StorageOptions& storage);

// Writes `values` as a 1-D fixed-length string dataset (like numpy's 'S' arrays).
absl::Status WriteStringArray(hid_t loc, const std::string& name,
                              const std::vector<std::string>& values);

// Reads a 1-D string dataset (fixed or variable length).
absl::StatusOr<std::vector<std::string>> ReadStringArray(hid_t dataset,
                                                         const std::string& display);

// Writes (replacing) a variable-length UTF-8 string attribute.
absl::Status WriteStringAttr(hid_t object, const std::string& name, const std::string& value);

// Writes (replacing) a scalar int64 attribute.
absl::Status WriteInt64Attr(hid_t object, const std::string& name, int64_t value);

// Reads a string attribute (fixed or variable length); nullopt when absent.
absl::StatusOr<std::optional<std::string>> ReadStringAttr(hid_t object, const std::string& name,
                                                          const std::string& display);

// Reads a scalar integer attribute as int64; nullopt when absent.
absl::StatusOr<std::optional<int64_t>> ReadInt64Attr(hid_t object, const std::string& name,
                                                     const std::string& display);

// The native HDF5 memory type of `dtype` (owned by the library; do not close).
hid_t NativeType(DType dtype);

}  // namespace roboloop::data::h5
