#include "registry/reference.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/registry/registry_fixture.h"

namespace roboloop::registry {
namespace {

using testing::HasSubstr;

class ReferenceTest : public testing_util::RegistryFixture {
 protected:
  Catalog& catalog() { return registry_->catalog(); }
};

TEST(ParseReference, Shapes) {
  auto version = ParseReference("cartpole-mlp:v7");
  ASSERT_TRUE(version.ok());
  EXPECT_EQ(version->form, ParsedReference::Form::kVersion);
  EXPECT_EQ(version->name, "cartpole-mlp");
  EXPECT_EQ(version->version, 7);
  auto alias = ParseReference("cartpole-mlp@champion");
  ASSERT_TRUE(alias.ok());
  EXPECT_EQ(alias->form, ParsedReference::Form::kAlias);
  EXPECT_EQ(alias->alias, "champion");
  auto prefix = ParseReference("ABCDEF12");
  ASSERT_TRUE(prefix.ok());
  EXPECT_EQ(prefix->id_prefix, "abcdef12");
}

TEST(ParseReference, MalformedReferencesSayWhy) {
  EXPECT_THAT(std::string(ParseReference("abc12").status().message()), HasSubstr("too short"));
  // A short name made of hex letters is read as an id prefix; the error also suggests the name.
  EXPECT_EQ(std::string(ParseReference("ed").status().message()),
            "invalid reference \"ed\": id prefix too short: give at least 6 hex characters; did you mean ed@latest?");
  EXPECT_THAT(std::string(ParseReference("model:7").status().message()), HasSubstr("name:vN"));
  EXPECT_THAT(std::string(ParseReference("model:v0").status().message()), HasSubstr("N >= 1"));
  EXPECT_THAT(std::string(ParseReference("cartpole").status().message()),
              HasSubstr("did you mean cartpole@latest"));
  EXPECT_EQ(ParseReference("../../x@latest").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseReference("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseReference("model@Bad").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ReferenceTest, ResolvesIdPrefixVersionAndAlias) {
  auto first = Register("cartpole-mlp", 1);
  auto second = Register("cartpole-mlp", 2);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(*ResolveCheckpointRef(catalog(), first->id()), first->id());
  EXPECT_EQ(*ResolveCheckpointRef(catalog(), first->id().substr(0, 10)), first->id());
  EXPECT_EQ(*ResolveCheckpointRef(catalog(), "cartpole-mlp:v2"), second->id());
  EXPECT_EQ(*ResolveCheckpointRef(catalog(), "cartpole-mlp@latest"), second->id());
}

TEST_F(ReferenceTest, MissesListCloseMatches) {
  ASSERT_TRUE(Register("cartpole-mlp", 1).ok());
  auto typo = ResolveCheckpointRef(catalog(), "cartpol-mlp:v1");
  EXPECT_EQ(typo.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(typo.status().message()), HasSubstr("unknown model 'cartpol-mlp'"));
  EXPECT_THAT(std::string(typo.status().message()), HasSubstr("close matches: cartpole-mlp"));

  auto version = ResolveCheckpointRef(catalog(), "cartpole-mlp:v9");
  EXPECT_THAT(std::string(version.status().message()), HasSubstr("versions 1..1"));
  auto alias = ResolveCheckpointRef(catalog(), "cartpole-mlp@lates");
  EXPECT_THAT(std::string(alias.status().message()), HasSubstr("close matches: latest"));
  auto id = ResolveCheckpointRef(catalog(), "ffffff00");
  EXPECT_EQ(id.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(id.status().message()), HasSubstr("ffffff00"));
}

TEST_F(ReferenceTest, AmbiguousPrefixListsCandidates) {
  // The catalog trusts its callers' ids, so two ids sharing a 6-character prefix can be made.
  std::vector<std::string> ids = {"abcdef" + std::string(58, '1'), "abcdef" + std::string(58, '2')};
  for (const std::string& id : ids) {
    CheckpointRecord record;
    record.id = id;
    record.model = "m";
    record.config_json = record.metrics_json = record.manifest_json = "{}";
    ASSERT_TRUE(catalog().InsertCheckpoint(record, Actor{"t", "h"}).ok());
  }
  auto ambiguous = ResolveCheckpointRef(catalog(), "abcdef");
  EXPECT_EQ(ambiguous.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(ambiguous.status().message()), HasSubstr("ambiguous"));
  EXPECT_THAT(std::string(ambiguous.status().message()), HasSubstr(ids[0]));
  EXPECT_THAT(std::string(ambiguous.status().message()), HasSubstr(ids[1]));
  EXPECT_EQ(*ResolveCheckpointRef(catalog(), "abcdef2"), ids[1]);
}

TEST_F(ReferenceTest, DatasetsResolveByVersionAndLatestOnly) {
  auto v1 = RegisterData("demos", "one");
  auto v2 = RegisterData("demos", "two");
  ASSERT_TRUE(v1.ok() && v2.ok());
  EXPECT_EQ(*ResolveDatasetRef(catalog(), "demos:v1"), v1->id());
  EXPECT_EQ(*ResolveDatasetRef(catalog(), "demos@latest"), v2->id());
  EXPECT_EQ(*ResolveDatasetRef(catalog(), v1->id().substr(0, 8)), v1->id());
  EXPECT_EQ(ResolveDatasetRef(catalog(), "demos@champion").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(ResolveDatasetRef(catalog(), "demo:v1").status().message()),
              HasSubstr("close matches: demos"));
  EXPECT_EQ(ResolveArtifactRef(catalog(), "demos:v2")->kind, ArtifactKind::kDataset);
}

}  // namespace
}  // namespace roboloop::registry
