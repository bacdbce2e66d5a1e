// Image-key datasets read and written a chunk at a time (HDF5's direct chunk I/O), the frames
// compressed and inflated by the frame codec (frame_codec.h) on several threads instead of by
// HDF5's deflate filter on the calling one. Only datasets laid out exactly as ImageStorage()
// lays them out take this path; hdf5_io.h ReadRows and AppendRows dispatch here and send every
// other layout (e.g. h5py's chunks of several frames) through HDF5's own pipeline. Module
// internal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "data/array.h"
#include "hdf5.h"

namespace roboloop::data::h5 {

// The deflate level of `dataset` when it is stored frame by frame: 1-byte unsigned integers of
// shape [T, H, W, 3] in chunks (1, H, W, 3) with deflate as the only filter
// (storage_options.h ImageStorage()); nullopt for any other layout or element type.
std::optional<int> FrameChunkLevel(hid_t dataset);

// Appends the frames of `block` (uint8 [n, H, W, 3], H and W those of `dataset`) to `dataset`,
// whose FrameChunkLevel is `level`: each frame compressed by CompressFrames at `level` on
// `threads` threads (0: its default) and written as one chunk with H5Dwrite_chunk, the dataset's
// deflate filter recorded as applied. The file's bytes do not depend on `threads`. Errors name
// `display`: a block of another frame shape (InvalidArgument), a failed write.
absl::Status AppendFrameChunks(hid_t dataset, int level, const Array& block, const std::string& display,
                               int threads);

// Reads frames [first, first + count) of `dataset` (FrameChunkLevel has a value; the range lies
// within it) into `out`: chunks read with H5Dread_chunk and inflated by InflateFrames. A chunk
// never written (the fill value) or stored with its filter skipped is read through HDF5's
// pipeline. A corrupt chunk is DataLoss "<display>: frame <i>: <what is wrong>".
absl::Status ReadFrameChunks(hid_t dataset, int64_t first, int64_t count, uint8_t* out,
                             const std::string& display);

}  // namespace roboloop::data::h5
