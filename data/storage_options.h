// How the data module lays new HDF5 datasets out on disk.
#pragma once

#include <cstdint>

namespace roboloop::data {

// Chunking and compression of written datasets. Compression is deflate (gzip) with the
// shuffle filter: Debian's libhdf5 has no lzf (lzf is h5py's own plugin filter, not part of
// libhdf5), so files stay readable by any HDF5 reader without plugins.
struct StorageOptions {
  int gzip_level = 4;                 // deflate level 0-9; 0 writes uncompressed chunks
  int64_t chunk_steps = 64;           // rows per chunk, or the first appended block's if more
  int64_t max_chunk_bytes = 1 << 20;  // chunks are shrunk to stay below this size
  // A dataset is compressed only when shuffle + deflate shrinks its first block by at least
  // this fraction; data that does not compress (e.g. noisy float sensors) is stored raw, since
  // inflating it would cost every load for little disk saved. 0 = always compress.
  double min_compression_saving = 0.2;
  // One step per chunk whatever the block sizes (image keys: a sampler reads single frames).
  bool chunk_per_step = false;
};

// Deflate level of image keys. Measured on 200 frames of 84x84 MuJoCo renders (push.xml, free
// camera) on the project's machine: level 1 stores 18.5% of the raw bytes at ~73 MB/s per core,
// 4 stores 15.1% at ~59 MB/s, 6 and 9 store 14.0% at ~32 and ~16 MB/s (docs/vision.md).
inline constexpr int kImageGzipLevel = 4;

// Image keys are deflated only when deflate at least halves their first frame. Rendered frames
// (flat colours) shrink to ~15 % and are deflated; frames decoded from lossy video (LeRobot
// imports) keep the codec's noise and shrink to ~56 % at 320x240, where deflate would triple
// the time to write and to read them for less than half the disk (docs/vision.md "Datasets").
inline constexpr double kImageMinCompressionSaving = 0.5;

// How image keys (`obs/<camera>_image`) are stored, whatever the options of the other features
// say: chunk (1, H, W, 3), deflated at kImageGzipLevel (no shuffle: one-byte elements) when
// that saves at least kImageMinCompressionSaving of the first frame, else raw. The writer
// deflates such frames itself, on several threads (data/frame_chunks.h).
inline StorageOptions ImageStorage() {
  StorageOptions storage;
  storage.gzip_level = kImageGzipLevel;
  storage.min_compression_saving = kImageMinCompressionSaving;
  storage.chunk_per_step = true;
  return storage;
}

}  // namespace roboloop::data
