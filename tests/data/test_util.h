// Helpers shared by the data tests: temporary folders and deterministic episodes.
#pragma once

#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <hdf5.h>

#include "data/array.h"
#include "data/dataset_reader.h"
#include "data/dataset_writer.h"
#include "gtest/gtest.h"

namespace roboloop::data::testing {

// A fresh directory under /tmp, removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "roboloop_data_XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code error;
    std::filesystem::remove_all(path_, error);
  }
  // Path of `name` inside the directory.
  std::string File(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The names in folder `dir` that begin with `prefix`, e.g. a writer's temporary "<out>.partial-<uuid>".
inline std::vector<std::string> NamesStartingWith(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0) names.push_back(name);
  }
  return names;
}

// A deterministic, non-trivial value for (seed, step, element).
inline double Wave(int seed, int step, int element) {
  return std::sin(0.37 * step + 1.3 * element + 0.11 * seed) * (1 + element) + 0.01 * seed;
}

// Episode with every kind of feature: float32 actions [T,4], float32 obs/qpos [T,3],
// float64 obs/qvel [T,2], int32 obs/count [T], float32 next_obs/qpos [T,3],
// float64 rewards [T], int64 dones [T], float64 states [T,5].
inline Episode MakeEpisode(int steps, int seed) {
  auto floats = [&](int width, int offset) {
    std::vector<float> values;
    for (int t = 0; t < steps; ++t)
      for (int e = 0; e < width; ++e) values.push_back(static_cast<float>(Wave(seed, t, e + offset)));
    return values;
  };
  auto doubles = [&](int width, int offset) {
    std::vector<double> values;
    for (int t = 0; t < steps; ++t)
      for (int e = 0; e < width; ++e) values.push_back(Wave(seed, t, e + offset));
    return values;
  };
  std::vector<int32_t> count;
  std::vector<int64_t> dones;
  for (int t = 0; t < steps; ++t) {
    count.push_back(seed * 1000 + t);
    dones.push_back(t + 1 == steps ? 1 : 0);
  }
  Episode episode;
  episode["actions"] = Array::From<float>({steps, 4}, floats(4, 0));
  episode["obs/qpos"] = Array::From<float>({steps, 3}, floats(3, 10));
  episode["obs/qvel"] = Array::From<double>({steps, 2}, doubles(2, 20));
  episode["obs/count"] = Array::From<int32_t>({steps}, count);
  episode["next_obs/qpos"] = Array::From<float>({steps, 3}, floats(3, 11));
  episode["rewards"] = Array::From<double>({steps}, doubles(1, 30));
  episode["dones"] = Array::From<int64_t>({steps}, dones);
  episode["states"] = Array::From<double>({steps, 5}, doubles(5, 40));
  return episode;
}

// Adds camera frames `name` (e.g. "obs/agentview_image"): uint8 [T, height, width, 3] with a
// deterministic pattern that differs by step, pixel, channel and seed.
inline void AddImage(Episode* episode, const std::string& name, int height, int width, int seed) {
  const int steps = static_cast<int>(episode->at("actions").Steps());
  std::vector<uint8_t> pixels;
  for (int t = 0; t < steps; ++t) {
    for (int p = 0; p < height * width * 3; ++p) {
      pixels.push_back(static_cast<uint8_t>((seed * 53 + t * 11 + p * 7) % 256));
    }
  }
  (*episode)[name] = Array::From<uint8_t>({steps, height, width, 3}, pixels);
}

// Adds camera frames `name` in flat bands, one colour per image row that differs by step, row,
// channel and seed, as rendered scenes have: deflate shrinks them well below half, so
// ImageStorage() stores them deflated (AddImage's frames do not shrink, and are stored raw).
inline void AddBandedImage(Episode* episode, const std::string& name, int height, int width, int seed) {
  const int steps = static_cast<int>(episode->at("actions").Steps());
  std::vector<uint8_t> pixels;
  for (int t = 0; t < steps; ++t) {
    for (int row = 0; row < height; ++row) {
      for (int column = 0; column < width; ++column) {
        for (int channel = 0; channel < 3; ++channel) {
          pixels.push_back(static_cast<uint8_t>((seed * 53 + t * 11 + row * 29 + channel * 7) % 256));
        }
      }
    }
  }
  (*episode)[name] = Array::From<uint8_t>({steps, height, width, 3}, pixels);
}

// The camera of MakeImageEpisode.
inline constexpr char kImageKey[] = "obs/agentview_image";

// MakeEpisode(steps, seed) with an 8x8 camera kImageKey (AddImage's frames: stored raw).
inline Episode MakeImageEpisode(int steps, int seed) {
  Episode episode = MakeEpisode(steps, seed);
  AddImage(&episode, kImageKey, 8, 8, seed);
  return episode;
}

// MakeEpisode(steps, seed) with a 16x16 camera kImageKey of banded frames (stored deflated).
inline Episode MakeBandedImageEpisode(int steps, int seed) {
  Episode episode = MakeEpisode(steps, seed);
  AddBandedImage(&episode, kImageKey, 16, 16, seed);
  return episode;
}

// Writes a dataset with one make(lengths[i], i) (MakeEpisode or MakeImageEpisode) per entry and
// returns the episodes.
inline std::vector<Episode> WriteDataset(const std::string& path, const std::vector<int>& lengths,
                                         const std::string& env_args = R"({"env_name": "Lift"})",
                                         Episode (*make)(int, int) = MakeEpisode) {
  DatasetWriter::Options options;
  options.path = path;
  options.env_args_json = env_args;
  auto writer = DatasetWriter::Create(options);
  EXPECT_TRUE(writer.ok()) << writer.status();
  std::vector<Episode> episodes;
  for (size_t i = 0; i < lengths.size(); ++i) {
    episodes.push_back(make(lengths[i], static_cast<int>(i)));
    auto demo = (*writer)->WriteEpisode(episodes.back());
    EXPECT_TRUE(demo.ok()) << demo.status();
  }
  const absl::Status closed = (*writer)->Close();
  EXPECT_TRUE(closed.ok()) << closed;
  return episodes;
}

// Opens `path` with default validation; a failure fails the test.
inline std::unique_ptr<DatasetReader> OpenOrDie(const std::string& path) {
  DatasetReader::Options options;
  options.path = path;
  auto reader = DatasetReader::Open(options);
  EXPECT_TRUE(reader.ok()) << reader.status();
  return std::move(reader).value();
}

// Overwrites the stored (compressed) chunk `index` of the chunked dataset `dataset` in the HDF5 file
// at `path` with 0xAB bytes, so that it no longer inflates.
inline void CorruptChunk(const std::string& path, const std::string& dataset, hsize_t index) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(file, 0) << path;
  const hid_t data = H5Dopen2(file, dataset.c_str(), H5P_DEFAULT);
  ASSERT_GE(data, 0) << dataset;
  const hsize_t coord[4] = {index, 0, 0, 0};
  unsigned filters = 0;
  haddr_t address = 0;
  hsize_t size = 0;
  ASSERT_GE(H5Dget_chunk_info_by_coord(data, coord, &filters, &address, &size), 0) << dataset;
  H5Dclose(data);
  H5Fclose(file);
  std::fstream out(path, std::ios::in | std::ios::out | std::ios::binary);
  out.seekp(static_cast<std::streamoff>(address));
  out.write(std::string(size, '\xAB').data(), static_cast<std::streamsize>(size));
  ASSERT_TRUE(out.good()) << path;
}

}  // namespace roboloop::data::testing
