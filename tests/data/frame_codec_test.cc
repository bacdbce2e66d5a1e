// The frame codec (data/frame_codec.h) and the chunk-by-chunk frame I/O built on it
// (data/frame_chunks.h): zlib streams that inflate back to the frames whatever the thread count,
// files that do not depend on it, corrupt chunks named, and other layouts left to HDF5.
#include <zlib.h>

#include <fstream>
#include <iterator>

#include "data/frame_chunks.h"
#include "data/frame_codec.h"
#include "data/hdf5_io.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/test_util.h"

namespace roboloop::data {
namespace {

using ::testing::HasSubstr;
using testing::kImageKey;
using testing::TempDir;

constexpr int kHeight = 24;
constexpr int kWidth = 32;
constexpr int64_t kFrameBytes = kHeight * kWidth * 3;

// MakeEpisode(steps, seed) with a 24x32 camera: blocks of colour plus a little pseudo-random
// noise, so frames compress somewhat, as camera frames do.
Episode MakeNoisyImageEpisode(int steps, int seed) {
  Episode episode = testing::MakeEpisode(steps, seed);
  std::vector<uint8_t> pixels;
  uint32_t state = 12345u + static_cast<uint32_t>(seed);
  for (int t = 0; t < steps; ++t) {
    for (int y = 0; y < kHeight; ++y) {
      for (int x = 0; x < kWidth; ++x) {
        for (int c = 0; c < 3; ++c) {
          state = state * 1664525u + 1013904223u;
          const int noise = (state >> 28) == 0 ? 1 : 0;  // one pixel channel in 16
          pixels.push_back(static_cast<uint8_t>((x / 4) * 16 + (y / 4) * 8 + t * 3 + c * 50 + noise));
        }
      }
    }
  }
  episode[kImageKey] = Array::From<uint8_t>({steps, kHeight, kWidth, 3}, pixels);
  return episode;
}

std::string WriteFile(const std::string& path, const std::vector<Episode>& episodes, int frame_threads) {
  DatasetWriter::Options options;
  options.path = path;
  options.frame_threads = frame_threads;
  auto writer = DatasetWriter::Create(options);
  EXPECT_TRUE(writer.ok()) << writer.status();
  for (const Episode& episode : episodes) EXPECT_TRUE((*writer)->WriteEpisode(episode).ok());
  EXPECT_TRUE((*writer)->Close().ok());
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The bytes of chunk `row` of `dataset_path` as stored, and the filters HDF5 records as skipped.
std::vector<uint8_t> StoredChunk(const std::string& path, const std::string& dataset_path, int64_t row,
                                 uint32_t* skipped_filters) {
  auto file = h5::OpenFile(path, /*writable=*/false);
  auto dataset = h5::OpenDataset(file->get(), dataset_path, dataset_path);
  const hsize_t offset[4] = {static_cast<hsize_t>(row), 0, 0, 0};
  hsize_t size = 0;
  EXPECT_GE(H5Dget_chunk_storage_size(dataset->get(), offset, &size), 0);
  std::vector<uint8_t> bytes(size);
  EXPECT_GE(H5Dread_chunk(dataset->get(), H5P_DEFAULT, offset, skipped_filters, bytes.data()), 0);
  return bytes;
}

// Replaces chunk `row` of `dataset_path` with `bytes`, recorded as deflated unless `skipped_filters`.
void OverwriteChunk(const std::string& path, const std::string& dataset_path, int64_t row,
                    const std::vector<uint8_t>& bytes, uint32_t skipped_filters = 0) {
  auto file = h5::OpenFile(path, /*writable=*/true);
  ASSERT_TRUE(file.ok()) << file.status();
  auto dataset = h5::OpenDataset(file->get(), dataset_path, dataset_path);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  const hsize_t offset[4] = {static_cast<hsize_t>(row), 0, 0, 0};
  ASSERT_GE(H5Dwrite_chunk(dataset->get(), H5P_DEFAULT, skipped_filters, offset, bytes.size(), bytes.data()), 0);
}

TEST(FrameCodecTest, StreamsAreZlibAndTheSameWhateverTheThreads) {
  const Array frames = MakeNoisyImageEpisode(13, 2).at(kImageKey);
  auto one = CompressFrames(frames.bytes.data(), 13, kFrameBytes, kImageGzipLevel, /*threads=*/1);
  auto four = CompressFrames(frames.bytes.data(), 13, kFrameBytes, kImageGzipLevel, /*threads=*/4);
  ASSERT_TRUE(one.ok() && four.ok());
  EXPECT_EQ(*one, *four);
  for (int i = 0; i < 13; ++i) {
    // zlib's own inflate, as HDF5's deflate filter runs it.
    std::vector<uint8_t> frame(kFrameBytes);
    uLongf size = kFrameBytes;
    ASSERT_EQ(uncompress(frame.data(), &size, (*one)[i].data(), (*one)[i].size()), Z_OK);
    ASSERT_EQ(size, static_cast<uLongf>(kFrameBytes));
    EXPECT_TRUE(std::equal(frame.begin(), frame.end(), frames.bytes.begin() + i * kFrameBytes)) << "frame " << i;
    EXPECT_LT((*one)[i].size(), static_cast<size_t>(kFrameBytes));
  }
  std::vector<uint8_t> inflated(frames.bytes.size());
  ASSERT_TRUE(InflateFrames(*one, kFrameBytes, 0, inflated.data(), /*threads=*/3).ok());
  EXPECT_EQ(inflated, frames.bytes);
}

TEST(FrameCodecTest, RefusesALevelOutsideOneToNine) {
  const std::vector<uint8_t> frame(12, 7);
  EXPECT_EQ(CompressFrames(frame.data(), 1, 12, 0).status().message(), "frame codec: deflate level 0 outside 1..9");
  EXPECT_EQ(CompressFrames(frame.data(), 1, 12, 10).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(FrameCodecTest, CorruptOrMissizedStreamsNameTheFrame) {
  const Array frames = MakeNoisyImageEpisode(4, 1).at(kImageKey);
  auto streams = CompressFrames(frames.bytes.data(), 4, kFrameBytes, kImageGzipLevel);
  ASSERT_TRUE(streams.ok());
  std::vector<std::vector<uint8_t>> corrupt = *streams;
  corrupt[2][0] ^= 0xff;
  corrupt[3][0] ^= 0xff;
  std::vector<uint8_t> out(frames.bytes.size());
  const absl::Status status = InflateFrames(corrupt, kFrameBytes, 10, out.data(), 2);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(status.message(), "frame 12: corrupt chunk (not a zlib stream)");
  EXPECT_EQ(InflateFrames(*streams, kFrameBytes + 1, 0, out.data()).message(),
            "frame 0: corrupt chunk (inflates to fewer than 2305 bytes)");
  EXPECT_EQ(InflateFrames(*streams, kFrameBytes - 1, 0, out.data()).message(),
            "frame 0: corrupt chunk (inflates to more than 2303 bytes)");
}

TEST(FrameChunksTest, WriterStoresTheCodecsStreamsAndReadsThemBack) {
  TempDir dir;
  const std::string path = dir.File("frames.hdf5");
  const std::vector<Episode> episodes = {MakeNoisyImageEpisode(9, 0), MakeNoisyImageEpisode(5, 1)};
  WriteFile(path, episodes, /*frame_threads=*/0);
  const Array& frames = episodes[1].at(kImageKey);
  auto streams = CompressFrames(frames.bytes.data(), 5, kFrameBytes, kImageGzipLevel, 1);
  ASSERT_TRUE(streams.ok());
  for (int row = 0; row < 5; ++row) {
    uint32_t skipped_filters = 7;
    EXPECT_EQ(StoredChunk(path, FeaturePath("demo_1", kImageKey), row, &skipped_filters), (*streams)[row]);
    EXPECT_EQ(skipped_filters, 0u);
  }
  const auto reader = testing::OpenOrDie(path);
  for (int demo = 0; demo < 2; ++demo) {
    auto read = reader->ReadFeature(DemoName(demo), kImageKey);
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(read->bytes, episodes[demo].at(kImageKey).bytes);
  }
  std::vector<uint8_t> rows(3 * kFrameBytes);
  ASSERT_TRUE(reader->ReadFeatureRows("demo_0", kImageKey, 4, 3, rows.data()).ok());
  const std::vector<uint8_t>& stored = episodes[0].at(kImageKey).bytes;
  EXPECT_EQ(rows, std::vector<uint8_t>(stored.begin() + 4 * kFrameBytes, stored.begin() + 7 * kFrameBytes));
}

TEST(FrameChunksTest, FilesAreTheSameBytesWhateverTheThreads) {
  TempDir dir;
  const std::vector<Episode> episodes = {MakeNoisyImageEpisode(40, 0), MakeNoisyImageEpisode(17, 1)};
  const std::string one = WriteFile(dir.File("one.hdf5"), episodes, 1);
  const std::string four = WriteFile(dir.File("four.hdf5"), episodes, 4);
  const std::string automatic = WriteFile(dir.File("auto.hdf5"), episodes, 0);
  ASSERT_GT(one.size(), 0u);
  EXPECT_TRUE(one == four) << "1 thread: " << one.size() << " bytes, 4 threads: " << four.size();
  EXPECT_TRUE(one == automatic);
}

TEST(FrameChunksTest, CorruptChunkNamesFileDatasetAndFrame) {
  TempDir dir;
  const std::string path = dir.File("corrupt.hdf5");
  WriteFile(path, {MakeNoisyImageEpisode(6, 0)}, 0);
  uint32_t skipped_filters = 0;
  std::vector<uint8_t> chunk = StoredChunk(path, FeaturePath("demo_0", kImageKey), 2, &skipped_filters);
  chunk[0] ^= 0xff;  // no longer a zlib header
  OverwriteChunk(path, FeaturePath("demo_0", kImageKey), 2, chunk);
  chunk = StoredChunk(path, FeaturePath("demo_0", kImageKey), 4, &skipped_filters);
  chunk[chunk.size() / 2] ^= 0x5a;
  OverwriteChunk(path, FeaturePath("demo_0", kImageKey), 4, chunk);
  const auto reader = testing::OpenOrDie(path);
  const std::string expected = path + ": data/demo_0/obs/agentview_image: frame 2: corrupt chunk (not a zlib stream)";
  const absl::StatusOr<Array> whole = reader->ReadFeature("demo_0", kImageKey);
  EXPECT_EQ(whole.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(std::string(whole.status().message()), expected);
  std::vector<uint8_t> rows(2 * kFrameBytes);
  EXPECT_EQ(std::string(reader->ReadFeatureRows("demo_0", kImageKey, 1, 2, rows.data()).message()), expected);
  // A flipped bit inside the stream: where inflating goes wrong depends on the bit.
  EXPECT_THAT(std::string(reader->ReadFeatureRows("demo_0", kImageKey, 3, 2, rows.data()).message()),
              HasSubstr(path + ": data/demo_0/obs/agentview_image: frame 4: corrupt chunk ("));
  EXPECT_TRUE(reader->ReadFeatureRows("demo_0", kImageKey, 5, 1, rows.data()).ok());
}

TEST(FrameChunksTest, OtherLayoutsAndOddChunksGoThroughHdf5) {
  TempDir dir;
  const std::string path = dir.File("layouts.hdf5");
  const Array frames = MakeNoisyImageEpisode(3, 0).at(kImageKey);
  {
    auto file = h5::CreateFile(path);
    ASSERT_TRUE(file.ok());
    // One frame per chunk, shuffled before the deflate: not the image layout.
    h5::Handle create_options(H5Pcreate(H5P_DATASET_CREATE));
    const hsize_t chunk[4] = {1, kHeight, kWidth, 3};
    H5Pset_chunk(create_options.get(), 4, chunk);
    H5Pset_shuffle(create_options.get());
    H5Pset_deflate(create_options.get(), kImageGzipLevel);
    const hsize_t dims[4] = {3, kHeight, kWidth, 3};
    h5::Handle space(H5Screate_simple(4, dims, nullptr));
    h5::Handle shuffled(H5Dcreate2(file->get(), "shuffled", H5T_NATIVE_UINT8, space.get(), H5P_DEFAULT,
                                   create_options.get(), H5P_DEFAULT));
    ASSERT_GE(H5Dwrite(shuffled.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, frames.bytes.data()), 0);
    EXPECT_FALSE(h5::FrameChunkLevel(shuffled.get()).has_value());
    // The image layout, with two more rows whose chunks are never written (the fill value, zeros).
    auto images = h5::CreateExtensible(file->get(), "images", DType::kUint8, {kHeight, kWidth, 3}, 3, ImageStorage());
    ASSERT_TRUE(images.ok());
    EXPECT_EQ(h5::FrameChunkLevel(images->get()), kImageGzipLevel);
    ASSERT_TRUE(h5::AppendRows(images->get(), frames, "images").ok());
    ASSERT_TRUE(h5::ExtendRows(images->get(), 2, "images").ok());
  }
  // Frame 0 stored raw, its deflate recorded as skipped (as HDF5 stores a chunk its optional filter failed on).
  OverwriteChunk(path, "images", 0, std::vector<uint8_t>(frames.bytes.begin(), frames.bytes.begin() + kFrameBytes),
                 /*skipped_filters=*/1);

  auto file = h5::OpenFile(path, /*writable=*/false);
  ASSERT_TRUE(file.ok());
  auto shuffled = h5::OpenDataset(file->get(), "shuffled", "shuffled");
  ASSERT_TRUE(shuffled.ok());
  std::vector<uint8_t> read(3 * kFrameBytes);
  ASSERT_TRUE(h5::ReadRows(shuffled->get(), DType::kUint8, 0, 3, read.data(), "shuffled").ok());
  EXPECT_EQ(read, frames.bytes);
  auto images = h5::OpenDataset(file->get(), "images", "images");
  ASSERT_TRUE(images.ok());
  read.assign(5 * kFrameBytes, 99);
  const absl::Status status = h5::ReadRows(images->get(), DType::kUint8, 0, 5, read.data(), "images");
  ASSERT_TRUE(status.ok()) << status;
  std::vector<uint8_t> expected = frames.bytes;
  expected.resize(5 * kFrameBytes, 0);
  EXPECT_EQ(read, expected);
}

}  // namespace
}  // namespace roboloop::data
