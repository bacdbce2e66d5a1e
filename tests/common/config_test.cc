#include "common/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "testdata/config_test.pb.h"

namespace roboloop {
namespace {

using testing::Pipeline;
using ::testing::HasSubstr;

TEST(ConfigTest, ParsesNestedMessagesEnumsMapsAndStructs) {
  const char* yaml = R"(name: quick
seed: 7
variables:
  steps: "500"
stages:
  - name: train
    kind: TRAIN
    retries: 2
    timeoutS: 1.5
    enabled: true
    params: {lr: 0.001, tags: [a, b], nested: {on: true}}
  - name: eval
    kind: EVALUATE
    needs: [train]
)";
  Pipeline p;
  ASSERT_TRUE(ParseYamlToProto(yaml, "p.yaml", &p).ok());
  EXPECT_EQ(p.name(), "quick");
  EXPECT_EQ(p.seed(), 7);
  EXPECT_EQ(p.variables().at("steps"), "500");
  ASSERT_EQ(p.stages_size(), 2);
  EXPECT_EQ(p.stages(0).kind(), testing::Stage::TRAIN);
  EXPECT_EQ(p.stages(0).retries(), 2);
  EXPECT_DOUBLE_EQ(p.stages(0).timeout_s(), 1.5);
  EXPECT_TRUE(p.stages(0).enabled());
  EXPECT_DOUBLE_EQ(p.stages(0).params().fields().at("lr").number_value(), 0.001);
  EXPECT_EQ(p.stages(0).params().fields().at("tags").list_value().values(1).string_value(), "b");
  EXPECT_TRUE(p.stages(0).params().fields().at("nested").struct_value().fields().at("on").bool_value());
  EXPECT_EQ(p.stages(1).needs(0), "train");
}

TEST(ConfigTest, UnknownKeyNamesFileLineAndKnownKeys) {
  Pipeline p;
  absl::Status s = ParseYamlToProto("name: x\nstages:\n  - name: a\n    retires: 3\n", "bad.yaml", &p);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("bad.yaml:4:5: unknown key 'retires' in Stage"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("retries"));
}

TEST(ConfigTest, TypeErrorsNameFileAndLine) {
  Pipeline p;
  absl::Status s = ParseYamlToProto("seed: 12x\n", "t.yaml", &p);
  EXPECT_THAT(std::string(s.message()), HasSubstr("t.yaml:1:7: field 'seed' expects a int64, got '12x'"));
  s = ParseYamlToProto("stages:\n  - kind: DEPLOY\n", "t.yaml", &p);
  EXPECT_THAT(std::string(s.message()), HasSubstr("t.yaml:2:11: field 'kind': 'DEPLOY' is not one of"));
  s = ParseYamlToProto("stages: {a: 1}\n", "t.yaml", &p);
  EXPECT_THAT(std::string(s.message()), HasSubstr("t.yaml:1:9: field 'stages' expects a list"));
  s = ParseYamlToProto("stages:\n  - enabled: maybe\n", "t.yaml", &p);
  EXPECT_THAT(std::string(s.message()), HasSubstr("expects true or false, got 'maybe'"));
}

TEST(ConfigTest, AKeyGivenTwiceIsAnErrorNamingBothLines) {
  Pipeline p;
  absl::Status s = ParseYamlToProto("name: c\nseed: 1\nname: d\n", "dup.yaml", &p);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("dup.yaml:3:1: duplicate key 'name' (name was given at line 1)"));
  s = ParseYamlToProto("variables:\n  a: 1\n  a: 2\n", "map.yaml", &p);
  EXPECT_THAT(std::string(s.message()), HasSubstr("map.yaml:3:3: duplicate key 'a' (given at line 2)"));
  s = ParseYamlToProto("stages:\n  - name: s\n    params: {x: 1, y: {z: 1, z: 2}}\n", "struct.yaml", &p);
  EXPECT_THAT(std::string(s.message()), HasSubstr("struct.yaml:3:30: duplicate key 'z' (given at line 3)"));
}

TEST(ConfigTest, ADirectoryIsNoConfigFile) {
  Pipeline p;
  const std::string dir = ::testing::TempDir();
  absl::Status s = LoadYamlFile(dir, &p);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr(dir + ": is a directory, expected a YAML file"));
}

TEST(ConfigTest, MalformedYamlReportsPosition) {
  Pipeline p;
  absl::Status s = ParseYamlToProto("name: [unclosed\n", "m.yaml", &p);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("m.yaml:"));
}

// Found by fuzzing (tests/fuzz/corpus/protocol/regression_invalid_utf8): a string field holding
// bytes that are not UTF-8 made protobuf's JSON printer emit text nlohmann::json then threw on.
TEST(ConfigTest, TextThatIsNotUtf8IsRefusedWithItsPosition) {
  Pipeline p;
  absl::Status s = ParseYamlToProto("name: ok\ndescription: caf\xc3\xa9 \xff\n", "u.yaml", &p);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("u.yaml:2:20: not UTF-8 text (byte 0xff)"));
  for (const char* bad : {"name: \xc0\xaf\n", "name: \xed\xa0\x80\n", "name: \xf4\x90\x80\x80\n", "name: \xe2\x82"}) {
    EXPECT_THAT(std::string(ParseYamlToProto(bad, "u.yaml", &p).message()), HasSubstr("u.yaml:1:7: not UTF-8")) << bad;
  }
  ASSERT_TRUE(ParseYamlToProto("name: \xf0\x9f\xa4\x96 \xe2\x82\xac\n", "u.yaml", &p).ok());
  EXPECT_EQ(p.name(), "\xf0\x9f\xa4\x96 \xe2\x82\xac");
}

TEST(ConfigTest, MissingFileNamesThePath) {
  Pipeline p;
  absl::Status s = LoadYamlFile("/nonexistent/roboloop.yaml", &p);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr("/nonexistent/roboloop.yaml"));
}

TEST(ConfigTest, LoadsFromFile) {
  std::string path = ::testing::TempDir() + "/config_test.yaml";
  std::ofstream(path) << "name: from-file\n";
  Pipeline p;
  ASSERT_TRUE(LoadYamlFile(path, &p).ok());
  EXPECT_EQ(p.name(), "from-file");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace roboloop
