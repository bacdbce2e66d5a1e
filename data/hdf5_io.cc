#include "data/hdf5_io.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <mutex>

#include <zlib.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "data/frame_chunks.h"

namespace roboloop::data::h5 {
namespace {

// HDF5 prints its error stack to stderr by default; the setting is per thread in the
// thread-safe build, so every entry point turns it off for the calling thread.
// The first call of the process also turns off HDF5's exit-time cleanup (it must come before
// the library initializes): HDF5 1.10 cannot close a file whose flush failed (a full disk),
// the file stays half-closed in the library, and that cleanup would crash the process on it.
// Every file is closed by its owner (h5::Handle), so the cleanup has nothing else to do.
void Quiet() {
  static std::once_flag no_exit_cleanup;
  std::call_once(no_exit_cleanup, [] { H5dont_atexit(); });
  thread_local bool quiet = false;
  if (!quiet) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    quiet = true;
  }
}

// Keeps the innermost message, skipping the plugin loader's frames (a missing filter such
// as lzf reports "can't open directory <plugins>" below "required filter 'lzf' is not
// registered").
herr_t KeepInnermost(unsigned, const H5E_error2_t* error, void* client) {
  std::string* kept = static_cast<std::string*>(client);
  const bool plugin_search = error->func_name != nullptr &&
                             std::strncmp(error->func_name, "H5PL", 4) == 0;
  if (kept->empty() && error->desc != nullptr && !plugin_search) *kept = error->desc;
  return 0;
}

// Keeps the errno a POSIX file-driver frame reports ("..., errno = 28, error message = ...").
herr_t KeepSystemErrno(unsigned, const H5E_error2_t* error, void* client) {
  int* kept = static_cast<int*>(client);
  if (*kept != 0 || error->desc == nullptr) return 0;
  const char* found = std::strstr(error->desc, "errno = ");
  if (found != nullptr) *kept = std::atoi(found + std::strlen("errno = "));
  return 0;
}

herr_t CollectName(hid_t, const char* name, const H5L_info_t*, void* client) {
  static_cast<std::vector<std::string>*>(client)->push_back(name);
  return 0;
}

Handle StringType(bool variable, size_t size, H5T_cset_t cset) {
  Handle type(H5Tcopy(H5T_C_S1));
  H5Tset_size(type.get(), variable ? H5T_VARIABLE : std::max<size_t>(size, 1));
  H5Tset_cset(type.get(), cset);
  if (!variable) H5Tset_strpad(type.get(), H5T_STR_NULLPAD);
  return type;
}

absl::Status CheckSingleValue(hid_t attr, const std::string& display) {
  Handle space(H5Aget_space(attr));
  if (H5Sget_simple_extent_npoints(space.get()) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(display, ": expected a single value"));
  }
  return absl::OkStatus();
}

// File access with a metadata cache that starts large enough for the object headers and
// chunk indexes of thousands of datasets: the default 2 MiB start evicts them between the
// validation scan and the reads, which then fetch them from the file again. The cache
// grows only with what is actually read.
Handle AccessOptions() {
  constexpr size_t kInitialCacheBytes = size_t{32} << 20;
  constexpr size_t kMaxCacheBytes = size_t{128} << 20;
  Handle access_options(H5Pcreate(H5P_FILE_ACCESS));
  H5AC_cache_config_t config;
  config.version = H5AC__CURR_CACHE_CONFIG_VERSION;
  H5Pget_mdc_config(access_options.get(), &config);
  config.set_initial_size = true;
  config.initial_size = kInitialCacheBytes;
  config.max_size = kMaxCacheBytes;
  H5Pset_mdc_config(access_options.get(), &config);
  return access_options;
}

std::vector<hsize_t> ToHsize(const std::vector<int64_t>& dims) {
  return std::vector<hsize_t>(dims.begin(), dims.end());
}

// Rows per chunk: one with chunk_per_step; else at least chunk_steps, or the first block whole
// when it is longer (a whole episode then lands in one chunk), but never over max_chunk_bytes
// (and at least one row).
int64_t ChunkRows(int64_t row_bytes, int64_t first_rows, const StorageOptions& storage) {
  if (storage.chunk_per_step) return 1;
  const int64_t by_size = storage.max_chunk_bytes / std::max<int64_t>(row_bytes, 1);
  const int64_t wanted = std::max<int64_t>({storage.chunk_steps, first_rows, 1});
  return std::clamp<int64_t>(by_size, 1, wanted);
}

}  // namespace

Handle::~Handle() {
  if (id_ < 0) return;
  switch (H5Iget_type(id_)) {
    case H5I_FILE: H5Fclose(id_); break;
    case H5I_GROUP: H5Gclose(id_); break;
    case H5I_DATASET: H5Dclose(id_); break;
    case H5I_DATASPACE: H5Sclose(id_); break;
    case H5I_DATATYPE: H5Tclose(id_); break;
    case H5I_ATTR: H5Aclose(id_); break;
    case H5I_GENPROP_LST: H5Pclose(id_); break;
    default: break;
  }
}

Handle& Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    Handle discard(id_);
    id_ = other.id_;
    other.id_ = -1;
  }
  return *this;
}

absl::Status ErrorFromStack(const std::string& what, const std::string& fallback) {
  std::string innermost;
  int system_errno = 0;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, KeepInnermost, &innermost);
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, KeepSystemErrno, &system_errno);
  H5Eclear2(H5E_DEFAULT);
  const std::string detail = innermost.empty() ? "" : " (HDF5: " + innermost + ")";
  if (system_errno > 0) {
    // The file system refused the write: say so first (e.g. "No space left on device") and
    // keep its code (ENOSPC: ResourceExhausted) rather than an anonymous internal error.
    absl::Status base = ErrnoStatus(system_errno, absl::StrCat(what, ": ", fallback));
    return absl::Status(base.code(), absl::StrCat(base.message(), detail));
  }
  return absl::InternalError(absl::StrCat(what, ": ", fallback, detail));
}

absl::Status CloseFile(Handle file, const std::string& path) {
  Quiet();
  const hid_t id = file.release();
  if (H5Fclose(id) < 0) return ErrorFromStack(path, "cannot close HDF5 file");
  return absl::OkStatus();
}

absl::StatusOr<Handle> OpenFile(const std::string& path, bool writable) {
  Quiet();
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is a folder, expected an HDF5 file"));
  }
  if (!std::filesystem::is_regular_file(path, error)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  }
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return absl::InvalidArgumentError(absl::StrCat(path, ": not an HDF5 file"));
  }
  Handle access_options = AccessOptions();
  Handle file(
      H5Fopen(path.c_str(), writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY, access_options.get()));
  if (file.get() < 0) return ErrorFromStack(path, "cannot open HDF5 file");
  return file;
}

absl::StatusOr<Handle> CreateFile(const std::string& path) {
  Quiet();
  // The 1.8 file format: groups index their links by name (a v2 B-tree over a fractal heap)
  // instead of a symbol table with a local heap, so opening one of many demos is cheap.
  // Readable by every HDF5 (and h5py) since 1.8.
  Handle access_options = AccessOptions();
  H5Pset_libver_bounds(access_options.get(), H5F_LIBVER_V18, H5F_LIBVER_LATEST);
  // No timestamps in the root group's header either: the same content gives the same bytes.
  Handle create_options(H5Pcreate(H5P_FILE_CREATE));
  H5Pset_obj_track_times(create_options.get(), 0);
  Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, create_options.get(), access_options.get()));
  if (file.get() < 0) return ErrorFromStack(path, "cannot create HDF5 file");
  return file;
}

ObjectKind KindOf(hid_t loc, const std::string& path) {
  Quiet();
  // One traversal: a missing link anywhere on the path (or a dangling one) fails the lookup.
  H5O_info_t info;
  if (H5Oget_info_by_name2(loc, path.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return ObjectKind::kMissing;
  }
  if (info.type == H5O_TYPE_GROUP) return ObjectKind::kGroup;
  if (info.type == H5O_TYPE_DATASET) return ObjectKind::kDataset;
  return ObjectKind::kOther;
}

absl::StatusOr<Handle> OpenGroup(hid_t loc, const std::string& path,
                                 const std::string& display) {
  Quiet();
  Handle group(H5Oopen(loc, path.c_str(), H5P_DEFAULT));
  if (group.get() < 0) {
    H5Eclear2(H5E_DEFAULT);
    return absl::NotFoundError(absl::StrCat(display, ": missing group"));
  }
  if (H5Iget_type(group.get()) != H5I_GROUP) {
    return absl::InvalidArgumentError(absl::StrCat(display, ": expected a group"));
  }
  return group;
}

namespace {

// H5Lvisit callback: stops at the first link that leads out of the file (external or user-defined),
// describing it in *(std::string*)`found`: "data/demo_1/actions: external link to d.hdf5:/data/...".
herr_t FindLinkOutOfFile(hid_t group, const char* name, const H5L_info_t* info, void* found) {
  if (info->type == H5L_TYPE_HARD || info->type == H5L_TYPE_SOFT) return 0;
  std::string* description = static_cast<std::string*>(found);
  *description = absl::StrCat(name, ": a user-defined link");
  if (info->type != H5L_TYPE_EXTERNAL) return 1;
  std::vector<char> value(info->u.val_size);
  const char* target_file = nullptr;
  const char* target_object = nullptr;
  if (H5Lget_val(group, name, value.data(), value.size(), H5P_DEFAULT) >= 0 &&
      H5Lunpack_elink_val(value.data(), value.size(), nullptr, &target_file, &target_object) >= 0) {
    *description = absl::StrCat(name, ": external link to ", target_file, ":", target_object);
  } else {
    *description = absl::StrCat(name, ": external link");
  }
  return 1;
}

// OK when the values of `dataset` are stored in its own file: neither a virtual dataset nor one
// stored in external raw files. Errors name `display`.
absl::Status CheckStoredInFile(hid_t dataset, const std::string& display) {
  Handle plist(H5Dget_create_plist(dataset));
  if (plist.get() < 0) return ErrorFromStack(display, "cannot read the dataset's creation properties");
  if (H5Pget_layout(plist.get()) == H5D_VIRTUAL) {
    return absl::InvalidArgumentError(absl::StrCat(
        display, ": a virtual dataset, whose values live in other files (a dataset file must be self-contained)"));
  }
  if (H5Pget_external_count(plist.get()) > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        display, ": values stored in external raw files (a dataset file must be self-contained)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Handle> OpenDataset(hid_t loc, const std::string& path,
                                   const std::string& display) {
  Quiet();
  Handle dataset(H5Oopen(loc, path.c_str(), H5P_DEFAULT));
  if (dataset.get() < 0) {
    H5Eclear2(H5E_DEFAULT);
    return absl::NotFoundError(absl::StrCat(display, ": missing dataset"));
  }
  if (H5Iget_type(dataset.get()) != H5I_DATASET) {
    return absl::InvalidArgumentError(absl::StrCat(display, ": expected a dataset, found a group"));
  }
  ROBOLOOP_RETURN_IF_ERROR(CheckStoredInFile(dataset.get(), display));
  return dataset;
}

absl::Status CheckNoExternalLinks(hid_t file) {
  Quiet();
  std::string found;
  const herr_t result = H5Lvisit(file, H5_INDEX_NAME, H5_ITER_NATIVE, FindLinkOutOfFile, &found);
  if (result < 0) {
    H5Eclear2(H5E_DEFAULT);
    return absl::InvalidArgumentError("/: cannot list the links of the file");
  }
  if (found.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(found, " (a dataset file must be self-contained: copy the data into the file)"));
}

absl::StatusOr<Handle> EnsureGroup(hid_t loc, const std::string& path) {
  Quiet();
  if (KindOf(loc, path) == ObjectKind::kGroup) return OpenGroup(loc, path, path);
  Handle link_options(H5Pcreate(H5P_LINK_CREATE));
  H5Pset_create_intermediate_group(link_options.get(), 1);
  Handle group_options(H5Pcreate(H5P_GROUP_CREATE));
  H5Pset_obj_track_times(group_options.get(), 0);
  Handle group(
      H5Gcreate2(loc, path.c_str(), link_options.get(), group_options.get(), H5P_DEFAULT));
  if (group.get() < 0) return ErrorFromStack(path, "cannot create group");
  return group;
}

absl::StatusOr<std::vector<std::string>> ListChildren(hid_t group, const std::string& display) {
  Quiet();
  std::vector<std::string> names;
  if (H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, nullptr, CollectName, &names) < 0) {
    return ErrorFromStack(display, "cannot list group");
  }
  return names;
}

absl::Status DeleteIfExists(hid_t loc, const std::string& path) {
  if (KindOf(loc, path) == ObjectKind::kMissing) return absl::OkStatus();
  if (H5Ldelete(loc, path.c_str(), H5P_DEFAULT) < 0) return ErrorFromStack(path, "cannot delete");
  return absl::OkStatus();
}

absl::StatusOr<DatasetShape> Describe(hid_t dataset, const std::string& display) {
  Quiet();
  Handle type(H5Dget_type(dataset));
  const H5T_class_t type_class = H5Tget_class(type.get());
  const size_t size = H5Tget_size(type.get());
  DatasetShape shape;
  if (type_class == H5T_FLOAT && (size == 4 || size == 8)) {
    shape.dtype = size == 4 ? DType::kFloat32 : DType::kFloat64;
  } else if (type_class == H5T_INTEGER && (size == 1 || size == 2 || size == 4 || size == 8)) {
    const bool is_signed = H5Tget_sign(type.get()) == H5T_SGN_2;
    constexpr DType kSigned[] = {DType::kInt8, DType::kInt16, DType::kInt32, DType::kInt64};
    constexpr DType kUnsigned[] = {DType::kUint8, DType::kUint16, DType::kUint32, DType::kUint64};
    const int index = size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : 3;
    shape.dtype = is_signed ? kSigned[index] : kUnsigned[index];
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        display, ": unsupported element type (HDF5 class ", static_cast<int>(type_class),
        ", ", size, " bytes; expected float32/float64 or an integer type)"));
  }
  Handle space(H5Dget_space(dataset));
  const int rank = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> dims(std::max(rank, 0));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  shape.dims.assign(dims.begin(), dims.end());
  return shape;
}

absl::Status ReadRows(hid_t dataset, DType dtype, int64_t first, int64_t count, void* out,
                      const std::string& display) {
  Quiet();
  if (count == 0) return absl::OkStatus();
  if (dtype == DType::kUint8 && FrameChunkLevel(dataset).has_value()) {
    return ReadFrameChunks(dataset, first, count, static_cast<uint8_t*>(out), display);
  }
  return ReadRowsThroughPipeline(dataset, dtype, first, count, out, display);
}

absl::Status ReadRowsThroughPipeline(hid_t dataset, DType dtype, int64_t first, int64_t count, void* out,
                                     const std::string& display) {
  Quiet();
  Handle file_space(H5Dget_space(dataset));
  const int rank = H5Sget_simple_extent_ndims(file_space.get());
  std::vector<hsize_t> dims(rank);
  H5Sget_simple_extent_dims(file_space.get(), dims.data(), nullptr);
  std::vector<hsize_t> start(rank, 0);
  start[0] = first;
  dims[0] = count;
  H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, dims.data(),
                      nullptr);
  Handle memory_space(H5Screate_simple(rank, dims.data(), nullptr));
  if (H5Dread(dataset, NativeType(dtype), memory_space.get(), file_space.get(), H5P_DEFAULT,
              out) < 0) {
    return ErrorFromStack(display, "cannot read");
  }
  return absl::OkStatus();
}

absl::Status CheckDeclaredSize(hid_t dataset, const DatasetShape& shape, const std::string& display) {
  int64_t bytes = DTypeSize(shape.dtype);
  for (int64_t dim : shape.dims) {
    if (dim < 0 || (dim > 0 && bytes > std::numeric_limits<int64_t>::max() / dim)) {
      return absl::DataLossError(absl::StrCat(display, ": declares a shape [", absl::StrJoin(shape.dims, ", "),
                                              "] whose size overflows 64 bits; the file is damaged"));
    }
    bytes *= dim;
  }
  const int64_t stored = static_cast<int64_t>(H5Dget_storage_size(dataset));
  if (bytes > kUncheckedDatasetBytes && bytes / kMaxStoredExpansion > stored) {
    return absl::DataLossError(absl::StrCat(display, ": declares ", bytes, " bytes (shape [",
                                            absl::StrJoin(shape.dims, ", "), "]) but stores ", stored,
                                            ", more than deflate can expand; the file is damaged"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Array> ReadArray(hid_t dataset, const std::string& display) {
  ROBOLOOP_ASSIGN_OR_RETURN(DatasetShape shape, Describe(dataset, display));
  ROBOLOOP_RETURN_IF_ERROR(CheckDeclaredSize(dataset, shape, display));
  Array array = Array::Zeros(shape.dtype, shape.dims);
  if (array.NumElements() == 0) return array;
  if (!shape.dims.empty()) {
    ROBOLOOP_RETURN_IF_ERROR(ReadRows(dataset, shape.dtype, 0, shape.dims[0], array.bytes.data(), display));
    return array;
  }
  if (H5Dread(dataset, NativeType(shape.dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT,
              array.bytes.data()) < 0) {
    return ErrorFromStack(display, "cannot read");
  }
  return array;
}

double ShuffleDeflateRatio(const std::vector<uint8_t>& bytes, int64_t element_bytes, int level,
                           int64_t probe_bytes) {
  const int64_t elements = std::min<int64_t>(bytes.size(), probe_bytes) / element_bytes;
  if (elements == 0) return 1.0;
  // The shuffle filter stores byte k of every element together, for k = 0..element_bytes-1.
  std::vector<uint8_t> shuffled(elements * element_bytes);
  for (int64_t e = 0; e < elements; ++e) {
    for (int64_t k = 0; k < element_bytes; ++k) shuffled[k * elements + e] = bytes[e * element_bytes + k];
  }
  uLongf compressed_size = compressBound(shuffled.size());
  std::vector<uint8_t> compressed(compressed_size);
  if (compress2(compressed.data(), &compressed_size, shuffled.data(), shuffled.size(), level) != Z_OK) {
    return 1.0;
  }
  return static_cast<double>(compressed_size) / static_cast<double>(shuffled.size());
}

absl::StatusOr<Handle> CreateExtensible(hid_t loc, const std::string& name, DType dtype,
                                        const std::vector<int64_t>& step_shape,
                                        int64_t first_rows, const StorageOptions& storage,
                                        const Array* first_block) {
  Quiet();
  std::vector<hsize_t> dims = {0};
  std::vector<hsize_t> max_dims = {H5S_UNLIMITED};
  int64_t row_bytes = DTypeSize(dtype);
  for (int64_t dim : step_shape) {
    dims.push_back(dim);
    max_dims.push_back(dim);
    row_bytes *= dim;
  }
  std::vector<hsize_t> chunk = dims;
  chunk[0] = ChunkRows(row_bytes, first_rows, storage);
  Handle space(H5Screate_simple(dims.size(), dims.data(), max_dims.data()));
  Handle create_options(H5Pcreate(H5P_DATASET_CREATE));
  H5Pset_obj_track_times(create_options.get(), 0);
  H5Pset_chunk(create_options.get(), chunk.size(), chunk.data());
  const bool compress =
      storage.gzip_level > 0 &&
      (first_block == nullptr || storage.min_compression_saving <= 0 ||
       ShuffleDeflateRatio(first_block->bytes, DTypeSize(dtype), storage.gzip_level,
                           storage.chunk_per_step ? row_bytes : kCompressionProbeBytes) <=
           1.0 - storage.min_compression_saving);
  if (compress) {
    if (DTypeSize(dtype) > 1) H5Pset_shuffle(create_options.get());
    H5Pset_deflate(create_options.get(), storage.gzip_level);
  }
  Handle dataset(H5Dcreate2(loc, name.c_str(), NativeType(dtype), space.get(), H5P_DEFAULT,
                            create_options.get(), H5P_DEFAULT));
  if (dataset.get() < 0) return ErrorFromStack(name, "cannot create dataset");
  return dataset;
}

absl::StatusOr<int64_t> ExtendRows(hid_t dataset, int64_t rows, const std::string& display) {
  Quiet();
  Handle old_space(H5Dget_space(dataset));
  const int rank = H5Sget_simple_extent_ndims(old_space.get());
  std::vector<hsize_t> dims(rank);
  H5Sget_simple_extent_dims(old_space.get(), dims.data(), nullptr);
  const int64_t old_rows = static_cast<int64_t>(dims[0]);
  dims[0] += rows;
  if (H5Dset_extent(dataset, dims.data()) < 0) return ErrorFromStack(display, "cannot extend");
  return old_rows;
}

absl::Status AppendRows(hid_t dataset, const Array& block, const std::string& display,
                        int frame_threads) {
  Quiet();
  const int64_t rows = block.Steps();
  if (rows == 0) return absl::OkStatus();
  if (block.dtype == DType::kUint8) {
    if (const std::optional<int> level = FrameChunkLevel(dataset); level.has_value()) {
      return AppendFrameChunks(dataset, *level, block, display, frame_threads);
    }
  }
  ROBOLOOP_ASSIGN_OR_RETURN(const int64_t old_rows, ExtendRows(dataset, rows, display));
  Handle file_space(H5Dget_space(dataset));
  const int rank = H5Sget_simple_extent_ndims(file_space.get());
  std::vector<hsize_t> start(rank, 0);
  start[0] = old_rows;
  std::vector<hsize_t> count = ToHsize(block.shape);
  H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(),
                      nullptr);
  Handle memory_space(H5Screate_simple(rank, count.data(), nullptr));
  if (H5Dwrite(dataset, NativeType(block.dtype), memory_space.get(), file_space.get(),
               H5P_DEFAULT, block.bytes.data()) < 0) {
    return ErrorFromStack(display, "cannot write");
  }
  return absl::OkStatus();
}

absl::Status WriteArray(hid_t loc, const std::string& name, const Array& array,
                        const StorageOptions& storage) {
  if (array.shape.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": rank-0 arrays are not written"));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(
      Handle dataset,
      CreateExtensible(loc, name, array.dtype, array.StepShape(), array.Steps(), storage, &array));
  return AppendRows(dataset.get(), array, name);
}

absl::Status WriteStringArray(hid_t loc, const std::string& name,
                              const std::vector<std::string>& values) {
  Quiet();
  size_t width = 1;
  for (const std::string& value : values) width = std::max(width, value.size());
  std::vector<char> buffer(values.size() * width, '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    std::memcpy(buffer.data() + i * width, values[i].data(), values[i].size());
  }
  Handle type = StringType(false, width, H5T_CSET_ASCII);
  const hsize_t count = values.size();
  Handle space(H5Screate_simple(1, &count, nullptr));
  Handle create_options(H5Pcreate(H5P_DATASET_CREATE));
  H5Pset_obj_track_times(create_options.get(), 0);
  Handle dataset(H5Dcreate2(loc, name.c_str(), type.get(), space.get(), H5P_DEFAULT,
                            create_options.get(), H5P_DEFAULT));
  if (dataset.get() < 0) return ErrorFromStack(name, "cannot create string dataset");
  if (!values.empty() &&
      H5Dwrite(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()) < 0) {
    return ErrorFromStack(name, "cannot write string dataset");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ReadStringArray(hid_t dataset,
                                                         const std::string& display) {
  Quiet();
  Handle file_type(H5Dget_type(dataset));
  if (H5Tget_class(file_type.get()) != H5T_STRING) {
    return absl::InvalidArgumentError(absl::StrCat(display, ": expected an array of strings"));
  }
  Handle space(H5Dget_space(dataset));
  if (H5Sget_simple_extent_ndims(space.get()) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(display, ": expected a 1-D array of strings"));
  }
  const hssize_t count = H5Sget_simple_extent_npoints(space.get());
  std::vector<std::string> values;
  if (count == 0) return values;
  const H5T_cset_t cset = H5Tget_cset(file_type.get());
  if (H5Tis_variable_str(file_type.get()) > 0) {
    Handle type = StringType(true, 0, cset);
    std::vector<char*> pointers(count, nullptr);
    if (H5Dread(dataset, type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, pointers.data()) < 0) {
      return ErrorFromStack(display, "cannot read strings");
    }
    for (char* pointer : pointers) values.emplace_back(pointer != nullptr ? pointer : "");
    H5Dvlen_reclaim(type.get(), space.get(), H5P_DEFAULT, pointers.data());
    return values;
  }
  const size_t width = H5Tget_size(file_type.get());
  Handle type = StringType(false, width, cset);
  std::vector<char> buffer(count * width);
  if (H5Dread(dataset, type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()) < 0) {
    return ErrorFromStack(display, "cannot read strings");
  }
  for (hssize_t i = 0; i < count; ++i) {
    const char* start = buffer.data() + i * width;
    values.emplace_back(start, strnlen(start, width));
  }
  return values;
}

absl::Status WriteStringAttr(hid_t object, const std::string& name, const std::string& value) {
  Quiet();
  if (H5Aexists(object, name.c_str()) > 0) H5Adelete(object, name.c_str());
  Handle type = StringType(true, 0, H5T_CSET_UTF8);
  Handle space(H5Screate(H5S_SCALAR));
  Handle attr(H5Acreate2(object, name.c_str(), type.get(), space.get(), H5P_DEFAULT,
                         H5P_DEFAULT));
  const char* text = value.c_str();
  if (attr.get() < 0 || H5Awrite(attr.get(), type.get(), &text) < 0) {
    return ErrorFromStack(name, "cannot write attribute");
  }
  return absl::OkStatus();
}

absl::Status WriteInt64Attr(hid_t object, const std::string& name, int64_t value) {
  Quiet();
  if (H5Aexists(object, name.c_str()) > 0) H5Adelete(object, name.c_str());
  Handle space(H5Screate(H5S_SCALAR));
  Handle attr(H5Acreate2(object, name.c_str(), H5T_STD_I64LE, space.get(), H5P_DEFAULT,
                         H5P_DEFAULT));
  if (attr.get() < 0 || H5Awrite(attr.get(), H5T_NATIVE_INT64, &value) < 0) {
    return ErrorFromStack(name, "cannot write attribute");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<std::string>> ReadStringAttr(hid_t object, const std::string& name,
                                                          const std::string& display) {
  Quiet();
  if (H5Aexists(object, name.c_str()) <= 0) return std::optional<std::string>();
  const std::string where = absl::StrCat(display, ": attribute ", name);
  Handle attr(H5Aopen(object, name.c_str(), H5P_DEFAULT));
  Handle file_type(H5Aget_type(attr.get()));
  if (H5Tget_class(file_type.get()) != H5T_STRING) {
    return absl::InvalidArgumentError(absl::StrCat(where, " is not a string"));
  }
  ROBOLOOP_RETURN_IF_ERROR(CheckSingleValue(attr.get(), where));
  const H5T_cset_t cset = H5Tget_cset(file_type.get());
  if (H5Tis_variable_str(file_type.get()) > 0) {
    Handle type = StringType(true, 0, cset);
    char* text = nullptr;
    if (H5Aread(attr.get(), type.get(), &text) < 0) return ErrorFromStack(where, "cannot read");
    std::string value = text != nullptr ? text : "";
    H5free_memory(text);
    return std::optional<std::string>(std::move(value));
  }
  const size_t width = H5Tget_size(file_type.get());
  Handle type = StringType(false, width, cset);
  std::vector<char> buffer(width);
  if (H5Aread(attr.get(), type.get(), buffer.data()) < 0) {
    return ErrorFromStack(where, "cannot read");
  }
  return std::optional<std::string>(std::string(buffer.data(), strnlen(buffer.data(), width)));
}

absl::StatusOr<std::optional<int64_t>> ReadInt64Attr(hid_t object, const std::string& name,
                                                     const std::string& display) {
  Quiet();
  if (H5Aexists(object, name.c_str()) <= 0) return std::optional<int64_t>();
  const std::string where = absl::StrCat(display, ": attribute ", name);
  Handle attr(H5Aopen(object, name.c_str(), H5P_DEFAULT));
  Handle file_type(H5Aget_type(attr.get()));
  if (H5Tget_class(file_type.get()) != H5T_INTEGER) {
    return absl::InvalidArgumentError(absl::StrCat(where, " is not an integer"));
  }
  ROBOLOOP_RETURN_IF_ERROR(CheckSingleValue(attr.get(), where));
  if (H5Tget_sign(file_type.get()) == H5T_SGN_NONE) {
    // Read unsigned as unsigned: HDF5 would clamp a value above the int64 range to its maximum.
    uint64_t value = 0;
    if (H5Aread(attr.get(), H5T_NATIVE_UINT64, &value) < 0) return ErrorFromStack(where, "cannot read");
    if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return absl::InvalidArgumentError(absl::StrCat(where, " is ", value, ", beyond the int64 range"));
    }
    return std::optional<int64_t>(static_cast<int64_t>(value));
  }
  int64_t value = 0;
  if (H5Aread(attr.get(), H5T_NATIVE_INT64, &value) < 0) {
    return ErrorFromStack(where, "cannot read");
  }
  return std::optional<int64_t>(value);
}

hid_t NativeType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return H5T_NATIVE_FLOAT;
    case DType::kFloat64: return H5T_NATIVE_DOUBLE;
    case DType::kInt8: return H5T_NATIVE_INT8;
    case DType::kUint8: return H5T_NATIVE_UINT8;
    case DType::kInt16: return H5T_NATIVE_INT16;
    case DType::kUint16: return H5T_NATIVE_UINT16;
    case DType::kInt32: return H5T_NATIVE_INT32;
    case DType::kUint32: return H5T_NATIVE_UINT32;
    case DType::kInt64: return H5T_NATIVE_INT64;
    case DType::kUint64: return H5T_NATIVE_UINT64;
  }
  return H5T_NATIVE_FLOAT;
}

}  // namespace roboloop::data::h5
