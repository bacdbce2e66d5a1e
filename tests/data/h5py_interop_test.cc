// Interoperability with h5py (robomimic's writer and reader): files written by h5py read back
// with the same values, and files written here read with h5py, camera frames included (written
// and read chunk by chunk with libdeflate here, through HDF5's zlib filter in h5py). h5py is the
// project environment's (python/pins.txt).
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include "common/sha256.h"
#include "data/dataset_reader.h"
#include "data/dataset_writer.h"
#include "data/frame_chunks.h"
#include "data/hdf5_io.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/data/test_util.h"

namespace roboloop::data {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;
using testing::WriteDataset;

constexpr char kWriteScript[] = R"PY(
import json, sys
import h5py
import numpy as np
path, compression = sys.argv[1], sys.argv[2]
# lzf is an optional filter: h5py stores chunks it cannot shrink unfiltered, so the lzf case
# uses a long, compressible first demo.
lengths = [5, 3] if compression == "gzip" else [4000, 3]
with h5py.File(path, "w") as f:
    data = f.create_group("data")
    for i, T in enumerate(lengths):
        g = data.create_group("demo_%d" % i)
        g.attrs["num_samples"] = T
        actions = (np.arange(T * 2).reshape(T, 2) * 0.25 + i).astype(np.float32)
        g.create_dataset("actions", data=actions, compression=compression)
        g.create_dataset("obs/qpos", data=np.arange(T * 3).reshape(T, 3) * 0.5 - i)
        g.create_dataset("rewards", data=np.arange(T) * 1.0)
        g.create_dataset("dones", data=(np.arange(T) == T - 1).astype(np.int64))
        g.create_dataset("states", data=np.ones((T, 4)) * i)
    data.attrs["total"] = sum(lengths)
    data.attrs["env_args"] = json.dumps({"env_name": "Lift", "type": 1, "env_kwargs": {}})
    f.create_dataset("mask/train", data=np.array(["demo_0"], dtype="S"))
    f.create_dataset("mask/valid", data=np.array(["demo_1"], dtype="S"))
)PY";

constexpr char kReadScript[] = R"PY(
import json, sys
import h5py
with h5py.File(sys.argv[1], "r") as f:
    data = f["data"]
    out = {
        "total": int(data.attrs["total"]),
        "env_args": json.loads(data.attrs["env_args"]),
        "demos": sorted(data.keys()),
        "num_samples": [int(data[d].attrs["num_samples"]) for d in sorted(data.keys())],
        "actions_sum": float(sum(data[d]["actions"][()].astype("float64").sum() for d in data)),
        "qpos_dtype": str(data["demo_0"]["obs/qpos"].dtype),
        "valid": [n.decode() for n in f["mask/valid"][()]],
    }
print(json.dumps(out))
)PY";

constexpr char kReadImagesScript[] = R"PY(
import hashlib, json, sys
import h5py
with h5py.File(sys.argv[1], "r") as f:
    out = {}
    for demo in sorted(f["data"].keys()):
        image = f["data"][demo]["obs/agentview_image"]
        frames = image[()]
        out[demo] = {
            "dtype": str(image.dtype), "shape": list(image.shape), "chunks": list(image.chunks),
            "compression": image.compression, "level": image.compression_opts,
            "shuffle": image.shuffle, "sha256": hashlib.sha256(frames.tobytes()).hexdigest(),
            "pixel_3_2_5": frames[3, 2, 5].tolist(),
        }
print(json.dumps(out))
)PY";

// robomimic's image layout as h5py writes it: frames uint8 [T, 6, 4, 3] holding
// (t * 29 + y * 13 + x * 5 + c * 3 + demo) % 256, gzip-compressed (zlib, level 4) in chunks of
// argv[2] frames (1: the layout roboloop writes, which it reads chunk by chunk).
constexpr char kWriteImagesScript[] = R"PY(
import sys
import h5py
import numpy as np
frames_per_chunk = int(sys.argv[2])
with h5py.File(sys.argv[1], "w") as f:
    data = f.create_group("data")
    for i, T in enumerate([5, 3]):
        g = data.create_group("demo_%d" % i)
        g.attrs["num_samples"] = T
        g.create_dataset("actions", data=np.zeros((T, 2), dtype=np.float32))
        t, y, x, c = np.meshgrid(np.arange(T), np.arange(6), np.arange(4), np.arange(3), indexing="ij")
        frames = ((t * 29 + y * 13 + x * 5 + c * 3 + i) % 256).astype(np.uint8)
        g.create_dataset("obs/agentview_image", data=frames, chunks=(frames_per_chunk, 6, 4, 3),
                         compression="gzip", compression_opts=4)
    data.attrs["total"] = 8
    data.attrs["env_args"] = "{}"
)PY";

// Runs `script` with `args`, returning stdout (empty on failure).
std::string RunPython(const TempDir& dir, const std::string& script, const std::string& args) {
  const std::string script_path = dir.File("script.py");
  std::ofstream(script_path) << script;
  const std::string out_path = dir.File("stdout.txt");
  if (std::system((std::string(ROBOLOOP_PYTHON) + " " + script_path + " " + args + " > " + out_path).c_str()) != 0) return "";
  std::stringstream out;
  out << std::ifstream(out_path).rdbuf();
  return out.str();
}

TEST(H5pyInteropTest, ReadsRobomimicFileWrittenByH5py) {
  TempDir dir;
  const std::string path = dir.File("robomimic.hdf5");
  RunPython(dir, kWriteScript, path + " gzip");
  DatasetReader::Options options;
  options.path = path;
  auto reader = DatasetReader::Open(options);
  ASSERT_TRUE(reader.ok()) << reader.status();
  const DatasetLayout& layout = (*reader)->layout();
  EXPECT_EQ(layout.total_steps, 8);
  EXPECT_EQ(nlohmann::json::parse(layout.env_args_json)["env_name"], "Lift");
  EXPECT_EQ(layout.masks.at("valid"), std::vector<std::string>({"demo_1"}));
  EXPECT_EQ(FindFeature(layout.spec, "obs/qpos")->dtype, DType::kFloat64);
  EXPECT_EQ(FindFeature(layout.spec, "dones")->dtype, DType::kInt64);
  for (int demo = 0; demo < 2; ++demo) {
    const int steps = demo == 0 ? 5 : 3;
    std::vector<float> actions;
    std::vector<double> qpos;
    for (int i = 0; i < steps * 2; ++i) actions.push_back(static_cast<float>(i * 0.25 + demo));
    for (int i = 0; i < steps * 3; ++i) qpos.push_back(i * 0.5 - demo);
    auto read_actions = (*reader)->ReadFeature(DemoName(demo), "actions");
    auto read_qpos = (*reader)->ReadFeature(DemoName(demo), "obs/qpos");
    ASSERT_TRUE(read_actions.ok() && read_qpos.ok());
    EXPECT_EQ(read_actions->bytes, Array::From<float>({steps, 2}, actions).bytes);
    EXPECT_EQ(read_qpos->bytes, Array::From<double>({steps, 3}, qpos).bytes);
  }
}

TEST(H5pyInteropTest, LzfCompressedFileGivesAClearError) {
  TempDir dir;
  const std::string path = dir.File("lzf.hdf5");
  RunPython(dir, kWriteScript, path + " lzf");
  DatasetReader::Options options;
  options.path = path;
  auto reader = DatasetReader::Open(options);
  ASSERT_FALSE(reader.ok());
  EXPECT_THAT(reader.status().message(), HasSubstr(path + ": data/demo_0/actions: cannot read"));
  EXPECT_THAT(std::string(reader.status().message()),
              HasSubstr("required filter 'lzf' is not registered"));
}

TEST(H5pyInteropTest, H5pyReadsFileWrittenHere) {
  TempDir dir;
  const std::string path = dir.File("ours.hdf5");
  DatasetWriter::Options options;
  options.path = path;
  options.env_args_json = R"({"env_name": "PickCube", "type": 1, "env_kwargs": {}})";
  auto writer = DatasetWriter::Create(options);
  double actions_sum = 0;
  for (int i = 0; i < 3; ++i) {
    const Episode episode = testing::MakeEpisode(4 + i, i);
    for (float value : episode.at("actions").Values<float>()) actions_sum += value;
    ASSERT_TRUE((*writer)->WriteEpisode(episode).ok());
  }
  ASSERT_TRUE((*writer)->SetMask("valid", {"demo_2"}).ok());
  ASSERT_TRUE((*writer)->Close().ok());
  const std::string out = RunPython(dir, kReadScript, path);
  ASSERT_FALSE(out.empty());
  const nlohmann::json json = nlohmann::json::parse(out);
  EXPECT_EQ(json["total"], 15);
  EXPECT_EQ(json["env_args"]["env_name"], "PickCube");
  EXPECT_EQ(json["demos"], nlohmann::json::array({"demo_0", "demo_1", "demo_2"}));
  EXPECT_EQ(json["num_samples"], nlohmann::json::array({4, 5, 6}));
  EXPECT_NEAR(json["actions_sum"].get<double>(), actions_sum, 1e-9);
  EXPECT_EQ(json["qpos_dtype"], "float32");
  EXPECT_EQ(json["valid"], nlohmann::json::array({"demo_2"}));
}

TEST(H5pyInteropTest, H5pyReadsImageKeysWrittenHere) {
  TempDir dir;
  const std::string path = dir.File("images.hdf5");
  const std::vector<Episode> episodes =
      WriteDataset(path, {5, 7}, R"({"env_name": "Lift"})", testing::MakeBandedImageEpisode);
  const std::string out = RunPython(dir, kReadImagesScript, path);
  ASSERT_FALSE(out.empty());
  const nlohmann::json json = nlohmann::json::parse(out);
  for (int demo = 0; demo < 2; ++demo) {
    const nlohmann::json& image = json[DemoName(demo)];
    const Array& frames = episodes[demo].at("obs/agentview_image");
    EXPECT_EQ(image["dtype"], "uint8");
    EXPECT_EQ(image["shape"], nlohmann::json::array({demo == 0 ? 5 : 7, 16, 16, 3}));
    EXPECT_EQ(image["chunks"], nlohmann::json::array({1, 16, 16, 3}));
    EXPECT_EQ(image["compression"], "gzip");
    EXPECT_EQ(image["level"], kImageGzipLevel);
    EXPECT_EQ(image["shuffle"], false);
    const std::string bytes(frames.bytes.begin(), frames.bytes.end());
    EXPECT_EQ(image["sha256"], Sha256Hex(bytes));
    const int64_t pixel = ((3 * 16 + 2) * 16 + 5) * 3;  // frame 3, row 2, column 5
    EXPECT_EQ(image["pixel_3_2_5"], nlohmann::json::array({frames.bytes[pixel], frames.bytes[pixel + 1],
                                                           frames.bytes[pixel + 2]}));
  }
}

// The deflate level of demo_0's frames when stored one frame per chunk (frame_chunks.h).
std::optional<int> FrameChunkLevelOf(const std::string& path) {
  auto file = h5::OpenFile(path, /*writable=*/false);
  auto dataset = h5::OpenDataset(file->get(), "data/demo_0/obs/agentview_image", "frames");
  return dataset.ok() ? h5::FrameChunkLevel(dataset->get()) : std::nullopt;
}

class ReadsImageKeysWrittenByH5py : public ::testing::TestWithParam<int> {};

TEST_P(ReadsImageKeysWrittenByH5py, FramesReadBackEqual) {
  TempDir dir;
  const std::string path = dir.File("robomimic_images.hdf5");
  RunPython(dir, kWriteImagesScript, path + " " + std::to_string(GetParam()));
  // One frame per chunk is read chunk by chunk, inflated by libdeflate; other chunkings by HDF5.
  EXPECT_EQ(FrameChunkLevelOf(path), GetParam() == 1 ? std::optional<int>(4) : std::nullopt);
  const std::unique_ptr<DatasetReader> reader = testing::OpenOrDie(path);
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(ImageFeatures(reader->layout().spec),
            std::vector<FeatureSpec>({{"obs/agentview_image", DType::kUint8, {6, 4, 3}}}));
  for (int demo = 0; demo < 2; ++demo) {
    auto frames = reader->ReadFeature(DemoName(demo), "obs/agentview_image");
    ASSERT_TRUE(frames.ok()) << frames.status();
    const int steps = demo == 0 ? 5 : 3;
    std::vector<uint8_t> expected;
    for (int t = 0; t < steps; ++t)
      for (int y = 0; y < 6; ++y)
        for (int x = 0; x < 4; ++x)
          for (int c = 0; c < 3; ++c) {
            expected.push_back(static_cast<uint8_t>((t * 29 + y * 13 + x * 5 + c * 3 + demo) % 256));
          }
    EXPECT_EQ(frames->bytes, expected);
  }
}

INSTANTIATE_TEST_SUITE_P(FramesPerChunk, ReadsImageKeysWrittenByH5py, ::testing::Values(1, 2));

TEST(H5pyInteropTest, H5pyReadsFramesCompressedOnSeveralThreads) {
  TempDir dir;
  const std::string path = dir.File("threads.hdf5");
  DatasetWriter::Options options;
  options.path = path;
  options.frame_threads = 3;
  auto writer = DatasetWriter::Create(options);
  ASSERT_TRUE(writer.ok()) << writer.status();
  std::vector<Episode> episodes;
  for (int demo = 0; demo < 2; ++demo) {
    episodes.push_back(testing::MakeEpisode(demo == 0 ? 20 : 7, demo));
    testing::AddImage(&episodes.back(), "obs/agentview_image", 48, 64, demo);
    ASSERT_TRUE((*writer)->WriteEpisode(episodes.back()).ok());
  }
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_EQ(FrameChunkLevelOf(path), kImageGzipLevel);
  const std::string out = RunPython(dir, kReadImagesScript, path);
  ASSERT_FALSE(out.empty());
  const nlohmann::json json = nlohmann::json::parse(out);
  const std::unique_ptr<DatasetReader> reader = testing::OpenOrDie(path);
  for (int demo = 0; demo < 2; ++demo) {
    const std::vector<uint8_t>& bytes = episodes[demo].at("obs/agentview_image").bytes;
    EXPECT_EQ(json[DemoName(demo)]["sha256"], Sha256Hex(std::string(bytes.begin(), bytes.end())));
    EXPECT_EQ(json[DemoName(demo)]["chunks"], nlohmann::json::array({1, 48, 64, 3}));
    auto read = reader->ReadFeature(DemoName(demo), "obs/agentview_image");
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(read->bytes, bytes);
  }
}

}  // namespace
}  // namespace roboloop::data
