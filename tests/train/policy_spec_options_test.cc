// A TrainConfig's PolicySpec as options of its policy kind (issue 27): the defaults come from
// the kind's schema (registry/policy_kinds/), not from a copy in the trainer.
#include "train/policy_spec_options.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace roboloop::train {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(PolicySpecOptionsTest, AnEmptySpecBecomesTheDefaultKindWithItsDefaults) {
  v1::PolicySpec spec;
  FillPolicySpecDefaults(spec);
  EXPECT_EQ(spec.kind(), "transformer");
  EXPECT_EQ(spec.history(), 1);
  EXPECT_EQ(spec.chunk(), 1);
  EXPECT_EQ(spec.d_model(), 128);
  EXPECT_EQ(spec.layers(), 4);
  EXPECT_EQ(spec.heads(), 4);
  EXPECT_EQ(spec.ffn(), 512);
  EXPECT_EQ(spec.flow_steps(), 10);
  EXPECT_TRUE(spec.hidden().empty());
}

TEST(PolicySpecOptionsTest, SetFieldsAreKeptAndOnlyTheKindsOptionsAreFilled) {
  v1::PolicySpec spec;
  spec.set_kind("mlp");
  spec.set_chunk(4);
  spec.set_activation("tanh");
  spec.set_keypoints(8);
  FillPolicySpecDefaults(spec);
  EXPECT_EQ(spec.chunk(), 4);
  EXPECT_EQ(spec.activation(), "tanh");
  EXPECT_EQ(spec.keypoints(), 8);
  EXPECT_EQ(spec.encoder_channels(), 32);
  EXPECT_EQ(spec.encoder_blocks(), 2);
  EXPECT_THAT(spec.hidden(), ElementsAre(256, 256));
  EXPECT_EQ(spec.d_model(), 0);
}

TEST(PolicySpecOptionsTest, OptionsHoldTheDatasetDimsAndTheKindsOptions) {
  v1::PolicySpec spec;
  spec.set_kind("mlp");
  spec.add_hidden(32);
  auto options = PolicyOptionsFromSpec(spec, 5, 2);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(*options, nlohmann::json({{"kind", "mlp"}, {"obs_dim", 5}, {"action_dim", 2}, {"history", 1},
                                      {"chunk", 1}, {"hidden", {32}}, {"activation", "relu"},
                                      {"cameras", nlohmann::json::array()}, {"encoder_channels", 32},
                                      {"encoder_blocks", 2}, {"keypoints", 32}}));
}

TEST(PolicySpecOptionsTest, AnUnknownKindOrABadValueIsRefused) {
  v1::PolicySpec spec;
  spec.set_kind("lstm");
  EXPECT_THAT(PolicyOptionsFromSpec(spec, 5, 2).status().message(),
              HasSubstr("unknown policy 'lstm' (known: mlp, transformer)"));
  spec.set_kind("torchscript");
  EXPECT_THAT(PolicyOptionsFromSpec(spec, 5, 2).status().message(),
              HasSubstr("unknown policy 'torchscript' (known: mlp, transformer)"));
  spec.set_kind("mlp");
  spec.set_activation("swish");
  EXPECT_THAT(PolicyOptionsFromSpec(spec, 5, 2).status().message(),
              HasSubstr("policy option 'activation' of kind 'mlp': expected one of relu, gelu, silu, tanh"));
  spec.set_kind("transformer");
  spec.clear_activation();
  spec.set_heads(-2);
  EXPECT_THAT(PolicyOptionsFromSpec(spec, 5, 2).status().message(), HasSubstr("'heads' of kind 'transformer'"));
}

// A field of another kind was once dropped without a word (an mlp with --flow-matching trained, and its
// checkpoint recorded flowMatching: true).
TEST(PolicySpecOptionsTest, FieldsOfAnotherKindAreRefusedByName) {
  v1::PolicySpec spec;
  spec.set_kind("mlp");
  spec.set_flow_matching(true);
  spec.set_d_model(64);
  EXPECT_THAT(PolicyOptionsFromSpec(spec, 5, 2).status().message(),
              HasSubstr("policy fields d_model, flow_matching are no option of policy 'mlp'"));
}

TEST(PolicySpecOptionsTest, ACheckpointsOptionsGiveBackItsSpec) {
  v1::PolicySpec spec;
  spec.set_kind("transformer");
  spec.set_history(3);
  spec.set_flow_matching(true);
  auto options = PolicyOptionsFromSpec(spec, 5, 2);
  ASSERT_TRUE(options.ok()) << options.status();
  const v1::PolicySpec back = PolicySpecFromOptions("transformer", *options);
  EXPECT_EQ(back.kind(), "transformer");
  EXPECT_EQ(back.history(), 3);
  EXPECT_TRUE(back.flow_matching());
  EXPECT_EQ(back.d_model(), 128);
}

}  // namespace
}  // namespace roboloop::train
