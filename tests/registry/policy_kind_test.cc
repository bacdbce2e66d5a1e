// Policy kinds (issue 27): the registry, the options schema with its defaults, a kind
// registered from this file alone, and the typed checkpoint manifest that names kinds.
#include "registry/policy_kind.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "registry/checkpoint_manifest.h"

namespace roboloop::registry {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A kind defined and registered by this file alone: the whole of what adding a kind takes on
// the torch-free side (docs/policy-kinds.md).
PolicyKind GainPolicyKind() {
  PolicyKind kind;
  kind.name = "test-gain";
  kind.summary = "actions = gain * observations (a test kind)";
  kind.options = ChunkPolicyOptions();
  kind.options.push_back({"gain", PolicyOptionType::kPositiveInteger, 2, {}, "factor"});
  kind.options.push_back({"mode", PolicyOptionType::kString, "linear", {"linear", "clipped"}, "shape"});
  kind.trainable = true;
  return kind;
}
const PolicyKindRegistration kGainRegistration(GainPolicyKind());

nlohmann::json ManifestJson(const std::string& kind, const nlohmann::json& options) {
  return {{"format_version", 1},
          {"model", "arm"},
          {"policy", {{"kind", kind}, {"options", options}}},
          {"obs_spec", {{"names", {"qpos", "qvel"}}, {"shapes", {{3}, {3}}}}},
          {"action_spec", {{"names", {"action"}}, {"shapes", {{2}}}, {"bounds", {nullptr}}}},
          {"normalization", {{"qpos", {{"mean", {0.5, 0.5, 0.5}}}}}},
          {"action_chunk", {{"horizon", 4}}},
          {"dataset_id", ""},
          {"parent_id", std::string(64, 'b')},
          {"step", 7},
          {"metrics", {{"loss", 0.25}}},
          {"blobs", {{"policy", {{"sha256", std::string(64, 'a')}, {"size", 12}}}}},
          {"provenance", {{"host", "box"}, {"libraries", {{"libtorch", "2.11"}}}}}};
}

TEST(PolicyKindTest, AKindRegisteredFromATestFileIsKnownEverywhereKindsAreListed) {
  auto kind = FindPolicyKind("test-gain");
  ASSERT_TRUE(kind.ok()) << kind.status();
  EXPECT_EQ((*kind)->summary, "actions = gain * observations (a test kind)");
  EXPECT_THAT(PolicyKindNames(), ElementsAre("mlp", "test-gain", "torchscript", "transformer"));
  EXPECT_THAT(TrainablePolicyKindNames(), ElementsAre("mlp", "test-gain", "transformer"));
  EXPECT_THAT(ExportablePolicyKindNames(), ElementsAre("mlp", "transformer"));
}

TEST(PolicyKindTest, CompletingOptionsFillsTheKindsDefaults) {
  auto kind = FindPolicyKind("test-gain");
  ASSERT_TRUE(kind.ok());
  auto options = CompletePolicyOptions(**kind, {{"obs_dim", 6}, {"action_dim", 2}, {"gain", 5}});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(*options, nlohmann::json({{"kind", "test-gain"}, {"obs_dim", 6}, {"action_dim", 2}, {"history", 1},
                                      {"chunk", 1}, {"gain", 5}, {"mode", "linear"}}));
}

TEST(PolicyKindTest, BadOptionsAreRefusedNamingTheOptionAndTheKind) {
  auto kind = FindPolicyKind("test-gain");
  ASSERT_TRUE(kind.ok());
  const nlohmann::json dims = {{"obs_dim", 6}, {"action_dim", 2}};
  struct Case {
    nlohmann::json options;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {{{"obs_dim", 6}}, "policy option 'action_dim' of kind 'test-gain': required"},
           {{{"obs_dim", 6}, {"action_dim", 2}, {"gain", 0}}, "'gain' of kind 'test-gain': expected a positive integer, got 0"},
           {{{"obs_dim", 6}, {"action_dim", 2}, {"mode", "cubic"}}, "'mode' of kind 'test-gain': expected one of linear, clipped"},
           {{{"obs_dim", 6}, {"action_dim", 2}, {"hidden", {8}}}, "'hidden' of kind 'test-gain': not an option of this kind"},
           {{{"obs_dim", 6}, {"action_dim", 2}, {"kind", "mlp"}}, "'kind' of kind 'test-gain': says \"mlp\""},
           {nlohmann::json::array(), "options of policy kind 'test-gain' must be a JSON object"}}) {
    auto completed = CompletePolicyOptions(**kind, c.options);
    EXPECT_EQ(completed.status().code(), absl::StatusCode::kInvalidArgument) << c.options.dump();
    EXPECT_THAT(completed.status().message(), HasSubstr(c.message));
  }
}

TEST(PolicyKindTest, AnUnknownKindIsRefusedListingTheKnownOnes) {
  auto kind = FindPolicyKind("lstm");
  EXPECT_EQ(kind.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(kind.status().message(),
              HasSubstr("unknown policy kind 'lstm' (known: mlp, test-gain, torchscript, transformer)"));
}

TEST(PolicyKindTest, ANameIsRegisteredOnceAndOptionsAreDeclaredOnce) {
  EXPECT_EQ(RegisterPolicyKind(GainPolicyKind()).code(), absl::StatusCode::kAlreadyExists);
  PolicyKind twice = GainPolicyKind();
  twice.name = "test-twice";
  twice.options.push_back(twice.options.back());
  EXPECT_THAT(RegisterPolicyKind(twice).message(), HasSubstr("declares option 'mode' twice"));
  EXPECT_EQ(RegisterPolicyKind(PolicyKind()).code(), absl::StatusCode::kInvalidArgument);
}

TEST(PolicyKindTest, TheBuiltInKindsCarryTheirDefaults) {
  EXPECT_EQ(DefaultPolicyKindName(), "transformer");
  auto transformer = FindPolicyKind("transformer");
  ASSERT_TRUE(transformer.ok());
  auto options = CompletePolicyOptions(**transformer, {{"obs_dim", 3}, {"action_dim", 1}});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ((*options)["d_model"], 128);
  EXPECT_EQ((*options)["heads"], 4);
  EXPECT_EQ((*options)["flow_matching"], false);
  auto mlp = FindPolicyKind("mlp");
  ASSERT_TRUE(mlp.ok());
  EXPECT_EQ(CompletePolicyOptions(**mlp, {{"obs_dim", 3}, {"action_dim", 1}})->at("hidden"),
            nlohmann::json({256, 256}));
  auto torchscript = FindPolicyKind("torchscript");
  ASSERT_TRUE(torchscript.ok());
  EXPECT_EQ((*torchscript)->blob_suffix, ".pt");
  EXPECT_FALSE((*torchscript)->trainable);
  EXPECT_EQ(*CompletePolicyOptions(**torchscript, nlohmann::json::object()), nlohmann::json({{"kind", "torchscript"}}));
}

// Issue 23, req 4: the trainable kinds see through the cameras of their options.
TEST(PolicyKindTest, TrainableKindsTakeCamerasAndEncoderOptions) {
  for (const char* name : {"mlp", "transformer"}) {
    auto kind = FindPolicyKind(name);
    ASSERT_TRUE(kind.ok());
    auto state_only = CompletePolicyOptions(**kind, {{"obs_dim", 3}, {"action_dim", 1}});
    ASSERT_TRUE(state_only.ok()) << state_only.status();
    EXPECT_EQ(state_only->at("cameras"), nlohmann::json::array()) << name;
    EXPECT_EQ(state_only->at("encoder_channels"), 32) << name;
    EXPECT_EQ(state_only->at("encoder_blocks"), 2) << name;
    EXPECT_EQ(state_only->at("keypoints"), 32) << name;
    const nlohmann::json cameras = {{{"name", "agentview"}, {"width", 84}, {"height", 84}},
                                    {{"name", "wrist"}, {"width", 64}, {"height", 48}}};
    EXPECT_TRUE(CheckPolicyOptions(**kind, {{"cameras", cameras}}).ok()) << name;
  }
  auto mlp = FindPolicyKind("mlp");
  ASSERT_TRUE(mlp.ok());
  for (const nlohmann::json& bad : {
           nlohmann::json::array({{{"name", "a"}, {"width", 0}, {"height", 8}}}),
           nlohmann::json::array({{{"name", "a"}, {"width", 8}, {"height", 4096}}}),
           nlohmann::json::array({{{"name", ""}, {"width", 8}, {"height", 8}}}),
           nlohmann::json::array({{{"name", "a"}, {"width", 8}}}),
           nlohmann::json::array({{{"name", "a"}, {"width", 8}, {"height", 8}, {"depth", true}}}),
           nlohmann::json::array({{{"name", "a"}, {"width", 8}, {"height", 8}}, {{"name", "a"}, {"width", 4}, {"height", 4}}}),
           nlohmann::json("agentview")}) {
    EXPECT_THAT(CheckPolicyOptions(**mlp, {{"cameras", bad}}).message(),
                AllOf(HasSubstr("policy option 'cameras' of kind 'mlp'"), HasSubstr("1..2048")))
        << bad.dump();
  }
}

TEST(CheckpointManifestTest, AManifestOfARegisteredKindRoundTrips) {
  const nlohmann::json json = ManifestJson("test-gain", {{"obs_dim", 6}, {"action_dim", 2}});
  auto manifest = CheckpointManifest::FromJson(json);
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  EXPECT_EQ(manifest->policy.kind, "test-gain");
  EXPECT_EQ(manifest->obs_spec.Floats(), 6);
  EXPECT_EQ(manifest->action_chunk_horizon, 4);
  EXPECT_EQ(manifest->Blob("policy")->size, 12);
  EXPECT_EQ(manifest->Blob("trainer_state"), nullptr);
  EXPECT_EQ(*manifest->provenance.host, "box");
  EXPECT_FALSE(manifest->provenance.user.has_value());
  EXPECT_EQ(manifest->ToJson(), json);
  EXPECT_EQ(manifest->CompleteOptions()->at("gain"), 2);
}

TEST(CheckpointManifestTest, OldManifestsWithAChunkExecutionStayReadableAndRoundTrip) {
  nlohmann::json json = ManifestJson("mlp", {{"hidden", {64, 64}}});
  json["action_chunk"]["execution"] = "receding_horizon";
  auto manifest = CheckpointManifest::FromJson(json);
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  EXPECT_EQ(manifest->legacy_chunk_execution, "receding_horizon");
  EXPECT_EQ(manifest->ToJson(), json);
  json["action_chunk"]["execution"] = "";
  EXPECT_THAT(CheckpointManifest::FromJson(json).status().message(),
              HasSubstr("manifest field 'action_chunk.execution': must not be empty"));
}

TEST(CheckpointManifestTest, CorruptManifestsAreRefusedNamingTheField) {
  nlohmann::json json = ManifestJson("lstm", nlohmann::json::object());
  EXPECT_THAT(CheckpointManifest::FromJson(json).status().message(),
              AllOf(HasSubstr("manifest field 'policy.kind'"), HasSubstr("unknown policy kind 'lstm'")));
  json = ManifestJson("mlp", nlohmann::json::object());
  json["obs_spec"]["shapes"] = {{3}};
  EXPECT_THAT(CheckpointManifest::FromJson(json).status().message(),
              HasSubstr("manifest field 'obs_spec.shapes': has 1 entries for 2 names"));
  EXPECT_THAT(CheckpointManifest::Parse("{\"format_version\": ").status().message(),
              HasSubstr("manifest is not valid JSON"));
  json = ManifestJson("mlp", {{"hidden", "wide"}});
  auto stored = CheckpointManifest::FromJson(json);
  ASSERT_TRUE(stored.ok()) << "options are checked where a policy is built";
  EXPECT_THAT(stored->CompleteOptions().status().message(), HasSubstr("policy option 'hidden' of kind 'mlp'"));
}

}  // namespace
}  // namespace roboloop::registry
