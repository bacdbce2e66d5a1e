// Round trips through DatasetWriter / DatasetReader and the writer's own checks.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "data/dataset_reader.h"
#include "data/dataset_writer.h"
#include "data/hdf5_io.h"

#include <hdf5.h>
#include <random>
#include "common/sha256.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/test_util.h"

namespace roboloop::data {
namespace {

using ::testing::HasSubstr;
using testing::MakeEpisode;
using testing::OpenOrDie;
using testing::TempDir;
using testing::WriteDataset;

TEST(DatasetIoTest, RoundTripIsBitwise) {
  TempDir dir;
  const std::string path = dir.File("d.hdf5");
  const std::vector<Episode> written = WriteDataset(path, {7, 130, 1});
  auto reader = OpenOrDie(path);
  ASSERT_EQ(reader->layout().demos.size(), 3u);
  EXPECT_EQ(reader->layout().total_steps, 138);
  EXPECT_EQ(reader->layout().env_args_json, R"({"env_name": "Lift"})");
  for (size_t i = 0; i < written.size(); ++i) {
    const std::string demo = DemoName(i);
    EXPECT_EQ(reader->layout().FindDemo(demo)->num_samples, written[i].at("actions").Steps());
    auto episode = reader->ReadEpisode(demo);
    ASSERT_TRUE(episode.ok()) << episode.status();
    ASSERT_EQ(episode->size(), written[i].size());
    for (const auto& [name, array] : written[i]) {
      const Array& read = episode->at(name);
      EXPECT_EQ(read.dtype, array.dtype) << name;
      EXPECT_EQ(read.shape, array.shape) << name;
      EXPECT_EQ(read.bytes, array.bytes) << demo << "/" << name;
    }
  }
}

TEST(DatasetIoTest, SpecRecordsStoredTypesAndShapes) {
  TempDir dir;
  WriteDataset(dir.File("d.hdf5"), {3});
  auto reader = OpenOrDie(dir.File("d.hdf5"));
  const FeatureSpec* qvel = FindFeature(reader->layout().spec, "obs/qvel");
  ASSERT_NE(qvel, nullptr);
  EXPECT_EQ(qvel->dtype, DType::kFloat64);
  EXPECT_EQ(qvel->step_shape, std::vector<int64_t>({2}));
  const FeatureSpec* count = FindFeature(reader->layout().spec, "obs/count");
  ASSERT_NE(count, nullptr);
  EXPECT_EQ(count->dtype, DType::kInt32);
  EXPECT_TRUE(count->step_shape.empty());
  EXPECT_EQ(reader->layout().spec.size(), 8u);
}

TEST(DatasetIoTest, StreamedBlocksEqualOneWrite) {
  TempDir dir;
  const Episode episode = MakeEpisode(50, 4);
  DatasetWriter::Options options;
  options.path = dir.File("streamed.hdf5");
  options.storage.chunk_steps = 8;
  auto writer = DatasetWriter::Create(options);
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->BeginEpisode().ok());
  for (int first = 0; first < 50; first += 15) {
    const int rows = std::min(15, 50 - first);
    Episode block;
    for (const auto& [name, array] : episode) {
      Array part = array;
      part.shape[0] = rows;
      const size_t row_bytes = array.bytes.size() / 50;
      part.bytes.assign(array.bytes.begin() + first * row_bytes,
                        array.bytes.begin() + (first + rows) * row_bytes);
      block[name] = part;
    }
    ASSERT_TRUE((*writer)->Append(block).ok());
  }
  ASSERT_TRUE((*writer)->EndEpisode().ok());
  ASSERT_TRUE((*writer)->Close().ok());
  auto reader = OpenOrDie(options.path);
  auto read = reader->ReadEpisode("demo_0");
  ASSERT_TRUE(read.ok());
  for (const auto& [name, array] : episode) EXPECT_EQ(read->at(name).bytes, array.bytes) << name;
}

TEST(DatasetIoTest, SameContentGivesIdenticalFileBytes) {
  TempDir dir;
  WriteDataset(dir.File("a.hdf5"), {5, 9});
  // HDF5 timestamps have one-second resolution: write the twin in a later second.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  WriteDataset(dir.File("b.hdf5"), {5, 9});
  EXPECT_EQ(*Sha256File(dir.File("a.hdf5")), *Sha256File(dir.File("b.hdf5")));
}

TEST(DatasetIoTest, MasksAndLineageRoundTrip) {
  TempDir dir;
  DatasetWriter::Options options;
  options.path = dir.File("m.hdf5");
  options.lineage = {"merge", {{"dataset", "x.hdf5", std::string(64, 'a')}}};
  auto writer = DatasetWriter::Create(options);
  ASSERT_TRUE(writer.ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*writer)->WriteEpisode(MakeEpisode(4, i)).ok());
  ASSERT_TRUE((*writer)->SetMask("train", {"demo_0", "demo_2"}).ok());
  ASSERT_TRUE((*writer)->SetMask("valid", {"demo_1"}).ok());
  ASSERT_TRUE((*writer)->Close().ok());
  auto reader = OpenOrDie(options.path);
  EXPECT_EQ(reader->layout().masks.at("train"), std::vector<std::string>({"demo_0", "demo_2"}));
  EXPECT_EQ(reader->layout().masks.at("valid"), std::vector<std::string>({"demo_1"}));
  EXPECT_EQ(reader->layout().lineage, options.lineage);
}

TEST(DatasetIoTest, WriterRejectsMismatchedEpisodes) {
  TempDir dir;
  DatasetWriter::Options options;
  options.path = dir.File("w.hdf5");
  auto writer = DatasetWriter::Create(options);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->WriteEpisode(MakeEpisode(4, 0)).ok());

  Episode other_dtype = MakeEpisode(4, 1);
  other_dtype["obs/qpos"] = Array::From<double>({4, 3}, std::vector<double>(12, 0.0));
  EXPECT_THAT((*writer)->WriteEpisode(other_dtype).status().message(),
              HasSubstr("demo_1/obs/qpos: float64 [T, 3], expected float32 [T, 3]"));

  Episode ragged = MakeEpisode(4, 1);
  ragged["obs/qpos"] = Array::From<float>({3, 3}, std::vector<float>(9, 0.f));
  ASSERT_TRUE((*writer)->BeginEpisode().ok());
  EXPECT_THAT((*writer)->Append(ragged).message(),
              HasSubstr("demo_1/obs/qpos: length 3, expected 4 (actions)"));
  Episode missing = MakeEpisode(4, 1);
  missing.erase("states");
  EXPECT_THAT((*writer)->Append(missing).message(), HasSubstr("demo_1/states: missing"));
  Episode unknown = MakeEpisode(4, 1);
  unknown["extras"] = Array::From<float>({4}, std::vector<float>(4, 0.f));
  EXPECT_THAT((*writer)->Append(unknown).message(), HasSubstr("not part of the robomimic layout"));
  EXPECT_THAT((*writer)->EndEpisode().status().message(), HasSubstr("empty episode"));
  ASSERT_TRUE((*writer)->AbortEpisode().ok());
  ASSERT_TRUE((*writer)->WriteEpisode(MakeEpisode(5, 1)).ok());
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_EQ(OpenOrDie(options.path)->layout().total_steps, 9);
}

TEST(DatasetIoTest, UnclosedWriterLeavesNoFile) {
  TempDir dir;
  DatasetWriter::Options options;
  options.path = dir.File("gone.hdf5");
  {
    auto writer = DatasetWriter::Create(options);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->WriteEpisode(MakeEpisode(4, 0)).ok());
  }
  EXPECT_FALSE(std::filesystem::exists(options.path));
  EXPECT_TRUE(testing::NamesStartingWith(dir.path(), "gone.hdf5").empty());
}

TEST(DatasetIoTest, AWriterLeavesAUsersPartialFileAlone) {
  TempDir dir;
  DatasetWriter::Options options;
  options.path = dir.File("out.hdf5");
  {
    std::ofstream mine(options.path + ".partial");
    mine << "precious";
  }
  auto writer = DatasetWriter::Create(options);
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->WriteEpisode(MakeEpisode(4, 0)).ok());
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_EQ(OpenOrDie(options.path)->layout().total_steps, 4);
  std::ifstream mine(options.path + ".partial");
  const std::string kept((std::istreambuf_iterator<char>(mine)), std::istreambuf_iterator<char>());
  EXPECT_EQ(kept, "precious");
}

TEST(DatasetIoTest, ExistingFileIsNotOverwrittenUnlessAsked) {
  TempDir dir;
  const std::string path = dir.File("keep.hdf5");
  WriteDataset(path, {3});
  const std::string before = *Sha256File(path);
  DatasetWriter::Options options;
  options.path = path;
  auto refused = DatasetWriter::Create(options);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(*Sha256File(path), before);
  options.overwrite = true;
  EXPECT_TRUE(DatasetWriter::Create(options).ok());
}

TEST(DatasetIoTest, BadEnvArgsAndEmptyDatasetAreRejected) {
  TempDir dir;
  DatasetWriter::Options options;
  options.path = dir.File("e.hdf5");
  options.env_args_json = "not json";
  EXPECT_THAT(DatasetWriter::Create(options).status().message(), HasSubstr("env_args"));
  options.env_args_json = "{}";
  auto writer = DatasetWriter::Create(options);
  ASSERT_TRUE(writer.ok());
  EXPECT_THAT((*writer)->Close().message(), HasSubstr("no episodes written"));
}

TEST(DatasetIoTest, ReaderNamesUnknownDemoAndFeature) {
  TempDir dir;
  WriteDataset(dir.File("d.hdf5"), {3});
  auto reader = OpenOrDie(dir.File("d.hdf5"));
  EXPECT_THAT(reader->ReadFeature("demo_9", "actions").status().message(), HasSubstr("demo_9"));
  EXPECT_THAT(reader->ReadFeature("demo_0", "obs/nope").status().message(),
              HasSubstr("data/demo_0/obs/nope: no such feature"));
}

}  // namespace
}  // namespace roboloop::data

namespace roboloop::data {
namespace {

// Number of filters on dataset `name` of `path`.
int FiltersOf(const std::string& path, const std::string& name) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t dataset = H5Dopen2(file, name.c_str(), H5P_DEFAULT);
  const hid_t create = H5Dget_create_plist(dataset);
  const int filters = H5Pget_nfilters(create);
  H5Pclose(create);
  H5Dclose(dataset);
  H5Fclose(file);
  return filters;
}

TEST(DatasetIoTest, CompressionIsUsedOnlyWhereItPays) {
  testing::TempDir dir;
  const std::string path = dir.File("mixed.hdf5");
  DatasetWriter::Options options;
  options.path = path;
  options.env_args_json = R"({"env_name": "Lift"})";
  auto writer = DatasetWriter::Create(options);
  ASSERT_TRUE(writer.ok()) << writer.status();
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  std::vector<float> noise(200 * 8), smooth(200 * 8);
  for (size_t i = 0; i < noise.size(); ++i) {
    noise[i] = normal(rng);
    smooth[i] = static_cast<float>(i / 8);
  }
  Episode episode;
  episode["actions"] = Array::From<float>({200, 8}, noise);
  episode["obs/qpos"] = Array::From<float>({200, 8}, smooth);
  ASSERT_TRUE((*writer)->WriteEpisode(episode).ok());
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_EQ(FiltersOf(path, "data/demo_0/actions"), 0) << "noise does not compress: stored raw";
  EXPECT_EQ(FiltersOf(path, "data/demo_0/obs/qpos"), 2) << "shuffle + deflate";
  EXPECT_LT(h5::ShuffleDeflateRatio(episode["obs/qpos"].bytes, 4, 4), 0.2);
  EXPECT_GT(h5::ShuffleDeflateRatio(episode["actions"].bytes, 4, 4), 0.8);
  auto reader = testing::OpenOrDie(path);
  auto read = reader->ReadEpisode("demo_0");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->at("actions").bytes, episode["actions"].bytes);
  EXPECT_EQ(read->at("obs/qpos").bytes, episode["obs/qpos"].bytes);
}

}  // namespace
// A chunked float32 dataset "values" of `dims` in a new file `path` with no chunk written: it
// declares dims but stores nothing, as a damaged file's header can.
void WriteDeclaredOnlyDataset(const std::string& path, const std::vector<hsize_t>& dims) {
  h5::Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  ASSERT_GE(file.get(), 0);
  h5::Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
  h5::Handle options(H5Pcreate(H5P_DATASET_CREATE));
  const std::vector<hsize_t> chunk(dims.size(), 1);
  H5Pset_chunk(options.get(), static_cast<int>(chunk.size()), chunk.data());
  h5::Handle dataset(H5Dcreate2(file.get(), "values", H5T_NATIVE_FLOAT, space.get(), H5P_DEFAULT, options.get(),
                                H5P_DEFAULT));
  ASSERT_GE(dataset.get(), 0);
}

absl::Status ReadDeclaredOnlyDataset(const std::string& path) {
  auto file = h5::OpenFile(path, /*writable=*/false);
  if (!file.ok()) return file.status();
  auto dataset = h5::OpenDataset(file->get(), "values", "values");
  if (!dataset.ok()) return dataset.status();
  return h5::ReadArray(dataset->get(), "damaged.hdf5: values").status();
}

TEST(ReadArrayTest, ADatasetDeclaringFarMoreThanItStoresIsRefusedBeforeAllocating) {
  TempDir dir;
  const std::string path = dir.File("damaged.hdf5");
  WriteDeclaredOnlyDataset(path, {hsize_t{1} << 40, 4});
  const absl::Status status = ReadDeclaredOnlyDataset(path);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("damaged.hdf5: values: declares 17592186044416 bytes (shape [1099511627776, "
                                          "4]) but stores 0"));
}

TEST(ReadArrayTest, AShapeWhoseSizeOverflowsIsRefused) {
  TempDir dir;
  const std::string path = dir.File("damaged.hdf5");
  WriteDeclaredOnlyDataset(path, {hsize_t{3689348814741910018}, 4});
  const absl::Status status = ReadDeclaredOnlyDataset(path);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("whose size overflows 64 bits"));
}

TEST(ReadArrayTest, ASmallDatasetOfFillValuesStillReads) {
  TempDir dir;
  const std::string path = dir.File("small.hdf5");
  WriteDeclaredOnlyDataset(path, {16, 4});
  EXPECT_TRUE(ReadDeclaredOnlyDataset(path).ok());
}

}  // namespace roboloop::data
