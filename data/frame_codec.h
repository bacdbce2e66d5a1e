// Compression of camera frames for the chunks of image keys (docs/vision.md "Storage"). Each
// frame becomes one zlib stream (RFC 1950), the format HDF5's deflate filter writes and reads:
// chunks written from these bytes with H5Dwrite_chunk read back through the deflate filter of
// any HDF5 reader (h5py without plugins), and chunks HDF5 deflated inflate here. libdeflate does
// the work; the frames of a call are spread over worker threads, one per hardware thread.
// Thread-safe: calls share no state.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace roboloop::data {

// Worker threads of a frame-codec call when none are asked for: one per hardware thread
// (std::thread::hardware_concurrency), at least 1.
int FrameCodecThreads();

// Compresses `count` frames of `frame_bytes` bytes each, stored back to back at `frames`, each
// into its own zlib stream at deflate level `level` (1-9 as zlib numbers them; libdeflate's
// streams differ from zlib's but inflate to the same bytes). Returns the streams in frame order.
// The bytes depend only on the frames and the level, never on `threads` (0: up to
// FrameCodecThreads(), fewer for little data).
// InvalidArgument for a level outside 1..9; ResourceExhausted when libdeflate cannot allocate.
absl::StatusOr<std::vector<std::vector<uint8_t>>> CompressFrames(const uint8_t* frames, int64_t count,
                                                                 int64_t frame_bytes, int level,
                                                                 int threads = 0);

// Inflates stream i of `streams` into the `frame_bytes` bytes at out + i · frame_bytes, using
// `threads` workers (0: as CompressFrames). A stream that is not zlib data, fails its checksum
// or does not inflate to exactly `frame_bytes` is DataLoss "frame <first_frame + i>: <what is
// wrong>" for the lowest such i; ResourceExhausted when libdeflate cannot allocate.
absl::Status InflateFrames(const std::vector<std::vector<uint8_t>>& streams, int64_t frame_bytes,
                           int64_t first_frame, uint8_t* out, int threads = 0);

}  // namespace roboloop::data
