// Run logs: CRC-32C, TFRecord framing, TensorBoard event files (wire format, CRC checks) and
// the JSON-lines log.
#include "train/run_log.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "common/fs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/test_util.h"
#include "train/crc32c.h"
#include "train/tfrecord.h"

namespace roboloop::train {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(Crc32cTest, MatchesTheCastagnoliCheckValues) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(""), 0u);
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);  // RFC 3720 B.4: 32 bytes of zeroes
  EXPECT_EQ(Crc32c(std::string(32, '\xFF')), 0x62A8AB43u);  // RFC 3720 B.4: 32 bytes of 0xFF
}

TEST(TfRecordTest, FramesAndParsesRecords) {
  const std::string contents = FrameRecord("hello") + FrameRecord("") + FrameRecord("world!");
  EXPECT_EQ(contents.size(), 3 * 16u + 5 + 6);
  EXPECT_EQ(contents.substr(0, 8), std::string("\x05\0\0\0\0\0\0\0", 8));
  auto records = ParseRecords(contents, "f");
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 3u);
  EXPECT_EQ((*records)[0].data, "hello");
  EXPECT_EQ((*records)[1].offset, 21);
  EXPECT_EQ((*records)[1].data, "");
  EXPECT_EQ((*records)[2].offset, 37);
  EXPECT_EQ((*records)[2].data, "world!");
  EXPECT_THAT(ParseRecords(contents.substr(0, contents.size() - 1), "f").status().message(),
              HasSubstr("f: record at offset 37: truncated data"));
}

// Little-endian bytes of a double and a float, as protobuf writes fixed64/fixed32.
std::string Fixed64(double value) {
  std::string bytes(8, '\0');
  std::memcpy(bytes.data(), &value, 8);
  return bytes;
}
std::string Fixed32(float value) {
  std::string bytes(4, '\0');
  std::memcpy(bytes.data(), &value, 4);
  return bytes;
}

class TensorBoardTest : public ::testing::Test {
 protected:
  std::string WriteEvents() {
    auto writer = TensorBoardWriter::Create(dir_.File("tb/run1"));
    EXPECT_TRUE(writer.ok()) << writer.status();
    EXPECT_TRUE((*writer)->AddScalar("train/loss", 10, 1000.5, 0.25f).ok());
    EXPECT_TRUE((*writer)->AddScalar("train/lr", 10, 1000.5, 0.0f).ok());
    EXPECT_TRUE((*writer)->AddScalar("train/loss", 300, 1001.0, -1.5f).ok());
    EXPECT_TRUE((*writer)->Flush().ok());
    return (*writer)->path();
  }

  data::testing::TempDir dir_;
};

TEST_F(TensorBoardTest, NamesTheFileAfterTimeAndHost) {
  const std::string path = WriteEvents();
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  EXPECT_THAT(path, StartsWith(dir_.File("tb/run1/events.out.tfevents.")));
  EXPECT_THAT(path, ::testing::EndsWith(std::string(".") + host));
  EXPECT_TRUE(PathExists(path));
}

TEST_F(TensorBoardTest, ASecondWriterInTheSameSecondGetsItsOwnFile) {
  auto first = TensorBoardWriter::Create(dir_.File("tb/run2"));
  auto second = TensorBoardWriter::Create(dir_.File("tb/run2"));
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status() << " (a resumed run must not collide with its predecessor's file)";
  EXPECT_NE((*first)->path(), (*second)->path());
  EXPECT_THAT((*second)->path(), ::testing::HasSubstr("events.out.tfevents."));
}

TEST_F(TensorBoardTest, ScalarsRoundTrip) {
  auto scalars = ReadTensorBoardScalars(WriteEvents());
  ASSERT_TRUE(scalars.ok()) << scalars.status();
  ASSERT_EQ(scalars->size(), 3u);
  EXPECT_EQ((*scalars)[0].tag, "train/loss");
  EXPECT_EQ((*scalars)[0].step, 10);
  EXPECT_EQ((*scalars)[0].wall_time, 1000.5);
  EXPECT_EQ((*scalars)[0].value, 0.25f);
  EXPECT_EQ((*scalars)[1].tag, "train/lr");
  EXPECT_EQ((*scalars)[1].value, 0.0f);  // a zero is still written (oneof presence)
  EXPECT_EQ((*scalars)[2].step, 300);
  EXPECT_EQ((*scalars)[2].value, -1.5f);
}

TEST_F(TensorBoardTest, RecordsAreTensorFlowEventWireBytes) {
  auto contents = ReadFile(WriteEvents());
  ASSERT_TRUE(contents.ok());
  auto records = ParseRecords(*contents, "events");
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 4u);
  // Event{wall_time (1, fixed64), file_version (3, bytes) = "brain.Event:2"}.
  const std::string& first = (*records)[0].data;
  ASSERT_EQ(first.size(), 9u + 2 + 13);
  EXPECT_EQ(first[0], '\x09');
  EXPECT_EQ(first.substr(9), std::string("\x1a\x0d") + "brain.Event:2");
  // Event{wall_time, step (2, varint) = 10, summary (5) {value (1) {tag (1), simple_value (2,
  // fixed32)}}}.
  const std::string value = std::string("\x0a\x0a") + "train/loss" + "\x15" + Fixed32(0.25f);
  const std::string summary = std::string("\x0a") + static_cast<char>(value.size()) + value;
  const std::string expected = "\x09" + Fixed64(1000.5) + "\x10\x0a" + "\x2a" +
                               static_cast<char>(summary.size()) + summary;
  EXPECT_EQ((*records)[1].data, expected);
}

TEST_F(TensorBoardTest, AFlippedByteFailsNamingFileAndOffset) {
  const std::string path = WriteEvents();
  auto contents = ReadFile(path);
  ASSERT_TRUE(contents.ok());
  auto records = ParseRecords(*contents, path);
  ASSERT_TRUE(records.ok());
  const int64_t second = (*records)[1].offset;
  auto corrupt = [&](int64_t at) {
    std::string bytes = *contents;
    bytes[at] ^= 0x01;
    const std::string copy = dir_.File("corrupt");
    EXPECT_TRUE(WriteFileAtomic(copy, bytes).ok());
    return std::string(ReadTensorBoardScalars(copy).status().message());
  };
  EXPECT_THAT(corrupt(second + 14),
              HasSubstr(dir_.File("corrupt") + ": record at offset " + std::to_string(second) +
                        ": data CRC mismatch"));
  EXPECT_THAT(corrupt(second + 1), HasSubstr("record at offset " + std::to_string(second) +
                                             ": length CRC mismatch"));
  EXPECT_THAT(corrupt(static_cast<int64_t>(contents->size()) - 1),
              HasSubstr("record at offset " + std::to_string((*records)[3].offset) +
                        ": data CRC mismatch"));
}

TEST_F(TensorBoardTest, RejectsAFileWithoutFileVersion) {
  const std::string path = dir_.File("plain");
  ASSERT_TRUE(WriteFileAtomic(path, FrameRecord(std::string("\x10\x05", 2))).ok());
  EXPECT_THAT(ReadTensorBoardScalars(path).status().message(),
              HasSubstr("first record is not a file_version"));
  EXPECT_THAT(ReadTensorBoardScalars(dir_.File("absent")).status().message(), HasSubstr("absent"));
}

TEST(JsonlLogTest, AppendsOneObjectPerLine) {
  data::testing::TempDir dir;
  const std::string path = dir.File("logs/run/train.jsonl");
  {
    auto log = JsonlLog::Create(path);
    ASSERT_TRUE(log.ok()) << log.status();
    ASSERT_TRUE((*log)->Append({{"step", 1}, {"loss", 0.5}}).ok());
    // Visible before the log is closed: each line is written when appended.
    auto partial = ReadFile(path);
    ASSERT_TRUE(partial.ok());
    EXPECT_EQ(*partial, "{\"loss\":0.5,\"step\":1}\n");
    EXPECT_THAT((*log)->Append(nlohmann::json::array({1, 2})).message(),
                HasSubstr("must be a JSON object, got array"));
  }
  auto reopened = JsonlLog::Create(path);
  ASSERT_TRUE(reopened.ok());
  ASSERT_TRUE((*reopened)->Append({{"step", 2}}).ok());
  std::ifstream in(path);
  std::string line;
  std::vector<nlohmann::json> lines;
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["step"], 1);
  EXPECT_EQ(lines[1]["step"], 2);
}

}  // namespace
}  // namespace roboloop::train
