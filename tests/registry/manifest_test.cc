#include "registry/manifest.h"

#include <gtest/gtest.h>

#include <string>

#include "common/sha256.h"
#include "registry/checkpoint_manifest.h"
#include "tests/registry/test_util.h"

namespace roboloop::registry {
namespace {

using nlohmann::json;
using testing_util::MakeManifest;

json Valid() { return MakeManifest("cartpole-mlp", {{"policy", "weights"}, {"trainer_state", "opt"}}, 42); }

void ExpectFieldError(const json& manifest, const std::string& field) {
  auto parsed = ParseManifest(manifest.dump());
  ASSERT_FALSE(parsed.ok()) << "accepted a manifest with bad " << field;
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(parsed.status().message().find("'" + field + "'"), std::string::npos)
      << parsed.status().message();
}

TEST(Manifest, ValidManifestParsesWithCanonicalId) {
  json manifest = Valid();
  auto parsed = ParseManifest(manifest.dump(2));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->model, "cartpole-mlp");
  EXPECT_EQ(parsed->step, 42);
  EXPECT_EQ(parsed->canonical, manifest.dump());
  EXPECT_EQ(parsed->id, Sha256Hex(manifest.dump()));
  ASSERT_EQ(parsed->blobs.size(), 2u);
  EXPECT_EQ(parsed->blobs[0].role(), "policy");
  EXPECT_EQ(parsed->blobs[0].sha256(), Sha256Hex("weights"));
  EXPECT_EQ(parsed->blobs[0].size(), 7);
  EXPECT_EQ(parsed->metrics_json, R"({"loss":0.5})");
}

TEST(Manifest, IdIgnoresWhitespaceAndKeyOrderButNotContent) {
  std::string spaced = Valid().dump(4);
  std::string compact = Valid().dump();
  EXPECT_EQ(ParseManifest(spaced)->id, ParseManifest(compact)->id);
  json other = Valid();
  other["step"] = 43;
  EXPECT_NE(ParseManifest(other.dump())->id, ParseManifest(compact)->id);
}

TEST(Manifest, MissingRequiredFieldsAreNamed) {
  for (const char* field : {"format_version", "model", "policy", "obs_spec", "action_spec",
                            "normalization", "action_chunk", "dataset_id", "parent_id", "step",
                            "metrics", "blobs", "provenance"}) {
    json manifest = Valid();
    manifest.erase(field);
    ExpectFieldError(manifest, field);
  }
}

TEST(Manifest, MistypedFieldsAreNamed) {
  json manifest = Valid();
  manifest["step"] = "ten";
  ExpectFieldError(manifest, "step");
  manifest = Valid();
  manifest["step"] = 1.5;
  ExpectFieldError(manifest, "step");
  manifest = Valid();
  manifest["policy"]["kind"] = "lstm";
  ExpectFieldError(manifest, "policy.kind");
  manifest = Valid();
  manifest["policy"].erase("options");
  ExpectFieldError(manifest, "policy.options");
  manifest = Valid();
  manifest["obs_spec"]["shapes"] = json::array({json::array({4}), json::array({2})});
  ExpectFieldError(manifest, "obs_spec.shapes");
  manifest = Valid();
  manifest["action_spec"]["shapes"][0][0] = -1;
  ExpectFieldError(manifest, "action_spec.shapes[0]");
  manifest = Valid();
  manifest["normalization"]["qpos"]["median"] = json::array({1});
  ExpectFieldError(manifest, "normalization.qpos.median");
  manifest = Valid();
  manifest["action_chunk"]["horizon"] = 0;
  ExpectFieldError(manifest, "action_chunk.horizon");
  manifest = Valid();
  manifest["metrics"]["loss"] = "low";
  ExpectFieldError(manifest, "metrics.loss");
  manifest = Valid();
  manifest["parent_id"] = "not-an-id";
  ExpectFieldError(manifest, "parent_id");
  manifest = Valid();
  manifest["blobs"]["policy"]["sha256"] = "xyz";
  ExpectFieldError(manifest, "blobs.policy.sha256");
  manifest = Valid();
  manifest["blobs"]["policy"]["size"] = -3;
  ExpectFieldError(manifest, "blobs.policy.size");
  manifest = Valid();
  manifest["blobs"] = json::object();
  ExpectFieldError(manifest, "blobs");
  manifest = Valid();
  manifest["provenance"]["libraries"]["mujoco"] = 2;
  ExpectFieldError(manifest, "provenance.libraries.mujoco");
  manifest = Valid();
  manifest["format_version"] = 2;
  ExpectFieldError(manifest, "format_version");
  manifest = Valid();
  manifest["surprise"] = true;
  ExpectFieldError(manifest, "surprise");
}

json WithCameras() {
  json manifest = Valid();
  manifest["obs_spec"]["cameras"] = {{{"name", "agentview"}, {"camera", "front"}, {"width", 84}, {"height", 64}},
                                     {{"name", "free"}, {"camera", ""}, {"width", 4}, {"height", 4}}};
  return manifest;
}

TEST(Manifest, CamerasAreReadInOrderAndRoundTrip) {
  auto parsed = CheckpointManifest::FromJson(WithCameras());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->obs_spec.cameras.size(), 2u);
  EXPECT_EQ(parsed->obs_spec.cameras[0], (ManifestCamera{"agentview", "front", 84, 64}));
  EXPECT_EQ(parsed->obs_spec.cameras[1], (ManifestCamera{"free", "", 4, 4}));
  EXPECT_EQ(parsed->ToJson(), WithCameras());
  EXPECT_TRUE(ParseManifest(WithCameras().dump()).ok());
}

TEST(Manifest, ManifestsWithoutCamerasStayValidAndRoundTripWithoutThem) {
  auto parsed = CheckpointManifest::FromJson(Valid());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->obs_spec.cameras.empty());
  EXPECT_EQ(parsed->ToJson(), Valid());
  EXPECT_FALSE(parsed->ToJson()["obs_spec"].contains("cameras"));
}

TEST(Manifest, BadCamerasAreRefusedNamingTheField) {
  json manifest = WithCameras();
  manifest["obs_spec"]["cameras"] = "agentview";
  ExpectFieldError(manifest, "obs_spec.cameras");
  manifest = WithCameras();
  manifest["obs_spec"]["cameras"][1]["width"] = 0;
  ExpectFieldError(manifest, "obs_spec.cameras[1].width");
  manifest = WithCameras();
  manifest["obs_spec"]["cameras"][0]["height"] = 8.5;
  ExpectFieldError(manifest, "obs_spec.cameras[0].height");
  manifest = WithCameras();
  manifest["obs_spec"]["cameras"][0].erase("camera");
  ExpectFieldError(manifest, "obs_spec.cameras[0].camera");
  manifest = WithCameras();
  manifest["obs_spec"]["cameras"][0]["name"] = "";
  ExpectFieldError(manifest, "obs_spec.cameras[0].name");
  manifest = WithCameras();
  manifest["obs_spec"]["cameras"][1]["name"] = "qpos";
  ExpectFieldError(manifest, "obs_spec.cameras[1].name");
  manifest = WithCameras();
  manifest["obs_spec"]["cameras"][0]["fps"] = 30;
  ExpectFieldError(manifest, "obs_spec.cameras[0].fps");
  manifest = WithCameras();
  manifest["obs_spec"]["cameras"][0] = json::array({84, 84});
  ExpectFieldError(manifest, "obs_spec.cameras[0]");
  manifest = Valid();
  manifest["action_spec"]["cameras"] = WithCameras()["obs_spec"]["cameras"];
  ExpectFieldError(manifest, "action_spec.cameras");
  manifest = Valid();
  manifest["obs_spec"]["camera"] = json::array();
  ExpectFieldError(manifest, "obs_spec.camera");
}

TEST(Manifest, BadNamesAreRefused) {
  json manifest = Valid();
  manifest["model"] = "../escape";
  ExpectFieldError(manifest, "model");
  manifest = Valid();
  manifest["blobs"]["Bad Role"] = {{"sha256", Sha256Hex("x")}, {"size", 1}};
  ExpectFieldError(manifest, "blobs.Bad Role");
}

TEST(Manifest, MalformedJsonIsReported) {
  for (std::string text : {std::string("{\"format_version\": 1,"), std::string("[1, 2]"),
                           std::string(""), std::string("null")}) {
    auto parsed = ParseManifest(text);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_NE(parsed.status().message().find("manifest"), std::string::npos);
  }
}

}  // namespace
}  // namespace roboloop::registry
