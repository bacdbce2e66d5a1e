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
};

}  // namespace roboloop::data
