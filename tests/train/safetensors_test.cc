// float32 safetensors files (the checkpoint's `policy` blob): round trip and bad files.
#include "train/safetensors.h"

#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/subprocess.h"

namespace roboloop::train {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::string WithHeader(const std::string& header) {
  std::string length(8, '\0');
  for (int i = 0; i < 8; ++i) length[i] = static_cast<char>(header.size() >> (8 * i));
  return length + header;
}

TEST(SafetensorsTest, RoundTripsShapesAndValues) {
  const std::string path = roboloop::testing::MakeTempDir("st") + "/w.safetensors";
  TensorMap tensors;
  tensors["a"] = {{2, 3}, {1, 2, 3, 4, 5, -6.5f}};
  tensors["b"] = {{0}, {}};
  tensors["c"] = {{1}, {0.25f}};
  ASSERT_TRUE(WriteSafetensors(path, tensors).ok());
  auto read = ReadSafetensors(path);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), 3u);
  for (const auto& [name, tensor] : tensors) {
    EXPECT_EQ(read->at(name).shape, tensor.shape) << name;
    EXPECT_EQ(read->at(name).values, tensor.values) << name;
  }
}

TEST(SafetensorsTest, ValuesThatDisagreeWithTheShapeAreNotWritten) {
  const std::string path = roboloop::testing::MakeTempDir("st") + "/w.safetensors";
  TensorMap tensors;
  tensors["w"] = {{2, 2}, {1, 2, 3}};
  EXPECT_THAT(WriteSafetensors(path, tensors).message(), AllOf(HasSubstr(path), HasSubstr("'w'")));
}

TEST(SafetensorsTest, BadFilesAreErrorsNamingTheFileAndTheFault) {
  const std::string dir = roboloop::testing::MakeTempDir("st");
  EXPECT_THAT(ReadSafetensors(dir + "/absent").status().message(), HasSubstr(dir + "/absent"));
  const std::string path = dir + "/bad.safetensors";
  WriteBytes(path, "abc");
  EXPECT_THAT(ReadSafetensors(path).status().message(),
              AllOf(HasSubstr(path), HasSubstr("too short")));
  WriteBytes(path, WithHeader("{not json"));
  EXPECT_THAT(ReadSafetensors(path).status().message(),
              AllOf(HasSubstr(path), HasSubstr("not a JSON object")));
  WriteBytes(path, WithHeader(R"({"w": {"dtype": "F16", "shape": [1], "data_offsets": [0, 2]}})") +
                       "xx");
  EXPECT_THAT(ReadSafetensors(path).status().message(),
              AllOf(HasSubstr(path), HasSubstr("'w'"), HasSubstr("F32")));
  WriteBytes(path, WithHeader(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})") +
                       "1234");
  EXPECT_THAT(ReadSafetensors(path).status().message(),
              AllOf(HasSubstr(path), HasSubstr("do not fit")));
  WriteBytes(path, WithHeader(R"({"w": {"dtype": "F32", "shape": "x", "data_offsets": [0, 4]}})") +
                       "1234");
  EXPECT_THAT(ReadSafetensors(path).status().message(),
              AllOf(HasSubstr(path), HasSubstr("malformed")));
}

// Found by fuzzing (tests/fuzz/corpus/safetensors/): element counts past int64 or past the
// file's data were taken modulo 2^64 and then allocated.
TEST(SafetensorsTest, ShapesWhoseElementCountOverflowsAreRefused) {
  const std::string path = roboloop::testing::MakeTempDir("st") + "/big.safetensors";
  for (const char* shape : {"[4294967296, 4294967296]", "[4611686018427387904]"}) {
    WriteBytes(path, WithHeader(absl::StrCat(R"({"w": {"dtype": "F32", "shape": )", shape,
                                             R"(, "data_offsets": [0, 0]}})")));
    EXPECT_THAT(ReadSafetensors(path).status().message(), AllOf(HasSubstr(path), HasSubstr("do not fit")))
        << shape;
  }
}

}  // namespace
}  // namespace roboloop::train
