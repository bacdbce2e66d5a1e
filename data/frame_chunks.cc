#include "data/frame_chunks.h"

#include <array>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "data/frame_codec.h"
#include "data/hdf5_io.h"

namespace roboloop::data::h5 {
namespace {

constexpr int kFrameRank = 4;  // [T, H, W, 3]

// The full shape of a rank-4 dataset (zeros for any other rank).
std::array<hsize_t, kFrameRank> FrameDims(hid_t dataset) {
  std::array<hsize_t, kFrameRank> dims = {0, 0, 0, 0};
  Handle space(H5Dget_space(dataset));
  if (H5Sget_simple_extent_ndims(space.get()) == kFrameRank) {
    H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  }
  return dims;
}

bool HoldsBytes(hid_t dataset) {
  Handle type(H5Dget_type(dataset));
  return H5Tget_class(type.get()) == H5T_INTEGER && H5Tget_size(type.get()) == 1 &&
         H5Tget_sign(type.get()) == H5T_SGN_NONE;
}

// Prefixes the message of a failed `status` with `display`.
absl::Status Named(const absl::Status& status, const std::string& display) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(display, ": ", status.message()));
}

}  // namespace

std::optional<int> FrameChunkLevel(hid_t dataset) {
  const std::array<hsize_t, kFrameRank> dims = FrameDims(dataset);
  if (dims[3] != 3 || !HoldsBytes(dataset)) return std::nullopt;
  Handle create_options(H5Dget_create_plist(dataset));
  if (H5Pget_layout(create_options.get()) != H5D_CHUNKED) return std::nullopt;
  std::array<hsize_t, kFrameRank> chunk = {0, 0, 0, 0};
  if (H5Pget_chunk(create_options.get(), kFrameRank, chunk.data()) != kFrameRank ||
      chunk != std::array<hsize_t, kFrameRank>{1, dims[1], dims[2], 3} ||
      H5Pget_nfilters(create_options.get()) != 1) {
    return std::nullopt;
  }
  unsigned flags = 0;
  size_t values_count = 1;
  unsigned level = 0;
  unsigned filter_config = 0;
  const H5Z_filter_t filter = H5Pget_filter2(create_options.get(), 0, &flags, &values_count, &level, 0,
                                             nullptr, &filter_config);
  if (filter != H5Z_FILTER_DEFLATE || values_count < 1 || level < 1 || level > 9) return std::nullopt;
  return static_cast<int>(level);
}

absl::Status AppendFrameChunks(hid_t dataset, int level, const Array& block, const std::string& display,
                               int threads) {
  const int64_t rows = block.Steps();
  if (rows == 0) return absl::OkStatus();
  const std::array<hsize_t, kFrameRank> dims = FrameDims(dataset);
  const std::vector<int64_t> frame_shape = {static_cast<int64_t>(dims[1]), static_cast<int64_t>(dims[2]), 3};
  if (block.StepShape() != frame_shape) {
    return absl::InvalidArgumentError(absl::StrCat(display, ": frames of shape ", ShapeToString(block.StepShape()),
                                                   ", the dataset's are ", ShapeToString(frame_shape)));
  }
  const int64_t frame_bytes = block.ElementsPerStep();
  absl::StatusOr<std::vector<std::vector<uint8_t>>> streams =
      CompressFrames(block.bytes.data(), rows, frame_bytes, level, threads);
  if (!streams.ok()) return Named(streams.status(), display);
  ROBOLOOP_ASSIGN_OR_RETURN(const int64_t old_rows, ExtendRows(dataset, rows, display));
  for (int64_t i = 0; i < rows; ++i) {
    const std::array<hsize_t, kFrameRank> offset = {static_cast<hsize_t>(old_rows + i), 0, 0, 0};
    const std::vector<uint8_t>& stream = (*streams)[i];
    if (H5Dwrite_chunk(dataset, H5P_DEFAULT, /*filters=*/0, offset.data(), stream.size(), stream.data()) < 0) {
      return ErrorFromStack(display, absl::StrCat("cannot write the chunk of frame ", old_rows + i));
    }
  }
  return absl::OkStatus();
}

absl::Status ReadFrameChunks(hid_t dataset, int64_t first, int64_t count, uint8_t* out,
                             const std::string& display) {
  const std::array<hsize_t, kFrameRank> dims = FrameDims(dataset);
  const int64_t frame_bytes = static_cast<int64_t>(dims[1] * dims[2] * dims[3]);
  std::vector<std::vector<uint8_t>> streams(count);
  for (int64_t i = 0; i < count; ++i) {
    const std::array<hsize_t, kFrameRank> offset = {static_cast<hsize_t>(first + i), 0, 0, 0};
    unsigned skipped_filters = 0;
    haddr_t address = HADDR_UNDEF;
    hsize_t stored_bytes = 0;
    if (H5Dget_chunk_info_by_coord(dataset, offset.data(), &skipped_filters, &address, &stored_bytes) < 0) {
      return ErrorFromStack(display, absl::StrCat("cannot find the chunk of frame ", first + i));
    }
    if (address == HADDR_UNDEF || stored_bytes == 0 || skipped_filters != 0) {
      return ReadRowsThroughPipeline(dataset, DType::kUint8, first, count, out, display);
    }
    streams[i].resize(stored_bytes);
    uint32_t read_filters = 0;
    if (H5Dread_chunk(dataset, H5P_DEFAULT, offset.data(), &read_filters, streams[i].data()) < 0) {
      return ErrorFromStack(display, absl::StrCat("cannot read the chunk of frame ", first + i));
    }
  }
  return Named(InflateFrames(streams, frame_bytes, first, out), display);
}

}  // namespace roboloop::data::h5
