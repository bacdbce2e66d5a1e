// Pipeline specs: loading, overrides and every validation error of issue 8, req 2.
#include "pipeline/spec.h"
#include "pipeline/stage_kinds/builtin.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"

#include "tests/util/subprocess.h"

namespace roboloop::pipeline {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The execution line every protocol needs (eval::CheckProtocolSettings).
constexpr char kFullChunk[] = "execution: {chunk: {mode: FULL_CHUNK}}\n";

class SpecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("spec");
    std::ofstream(dir_ + "/gate.yaml") << "task: cartpole-swingup\nbase_seed: 0\nseed_start: 1000\nepisodes: 100\nmax_steps: 50\n" << kFullChunk;
    std::ofstream(dir_ + "/feedback.yaml") << "task: cartpole-swingup\nbase_seed: 0\nseed_start: 5000\nepisodes: 10\nmax_steps: 50\n" << kFullChunk;
  }

  std::string Write(const std::string& text) {
    const std::string path = dir_ + "/p" + std::to_string(count_++) + ".yaml";
    std::ofstream(path) << text;
    return path;
  }

  absl::StatusOr<Plan> Validate(const std::string& text, const std::vector<Override>& overrides = {}) {
    auto loaded = LoadPipeline(Write(text), overrides);
    if (!loaded.ok()) return loaded.status();
    ValidationOptions options;
    options.protocols_dir = dir_;
    return ValidatePipeline(*loaded, BuiltinStageKinds(), options);
  }

  std::string dir_;
  int count_ = 0;
};

constexpr char kLoop[] = R"(name: loop
stages:
  - name: demos
    kind: collect
    collect: {task: cartpole-swingup, episodes: 100, first_episode: 0}
  - name: train
    kind: train
    train: {dataset: "${demos.dataset}", steps: 10}
  - name: improve
    kind: loop
    needs: [train]
    loop:
      max_iterations: 3
      until: "${gate.success.lower} >= 0.85"
      stages:
        - name: feedback
          kind: evaluate
          evaluate: {checkpoint: "${train.checkpoint}", protocol: feedback}
        - name: gate
          kind: evaluate
          evaluate: {checkpoint: "${train.checkpoint}", protocol: gate}
        - name: finetune
          kind: train
          train: {dataset: d.hdf5, init_from: "${train.checkpoint}", steps: 10}
  - name: promote
    kind: promote
    promote: {model: m, candidate: "${improve.checkpoint}", protocol: gate}
)";

TEST_F(SpecTest, ValidPipelineGivesLevelsInDependencyOrder) {
  auto plan = Validate(kLoop);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->levels.size(), 4u);
  EXPECT_THAT(plan->levels[0], ElementsAre("demos"));
  EXPECT_THAT(plan->levels[2], ElementsAre("improve"));
  EXPECT_THAT(plan->depends_on.at("feedback"), ::testing::IsEmpty());
  EXPECT_THAT(plan->depends_on.at("improve"), ElementsAre("train"));
}

TEST_F(SpecTest, TheShippedQuickstartIsValid) {
  auto loaded = LoadPipeline(std::string(ROBOLOOP_SOURCE_DIR) + "/configs/pipelines/quickstart.yaml", {});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ValidationOptions options;
  options.protocols_dir = std::string(ROBOLOOP_SOURCE_DIR) + "/configs/protocols";
  auto plan = ValidatePipeline(*loaded, BuiltinStageKinds(), options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->levels.front(), std::vector<std::string>{"demos"});
}

TEST_F(SpecTest, EveryShippedPipelineIsValid) {
  for (const char* name : {"quickstart", "reacher", "push", "custom-task", "vision"}) {
    auto loaded = LoadPipeline(std::string(ROBOLOOP_SOURCE_DIR) + "/configs/pipelines/" + name + ".yaml", {});
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    ValidationOptions options;
    options.protocols_dir = std::string(ROBOLOOP_SOURCE_DIR) + "/configs/protocols";
    EXPECT_TRUE(ValidatePipeline(*loaded, BuiltinStageKinds(), options).ok()) << name;
  }
}

// `stage`'s dependencies in `plan`, direct and indirect.
std::set<std::string> Upstream(const Plan& plan, const std::string& stage) {
  std::set<std::string> seen;
  std::vector<std::string> pending = {stage};
  while (!pending.empty()) {
    const std::string next = pending.back();
    pending.pop_back();
    for (const std::string& dep : plan.depends_on.at(next)) {
      if (seen.insert(dep).second) pending.push_back(dep);
    }
  }
  return seen;
}

// The name of the first top-level stage of `pipeline` that `matches`, or "".
std::string StageWhere(const v1::Pipeline& pipeline, const std::function<bool(const v1::Stage&)>& matches) {
  for (const v1::Stage& stage : pipeline.stages()) {
    if (matches(stage)) return stage.name();
  }
  return "";
}

// A shipped closed loop never leaves a better behaviour-cloning policy behind: the checkpoint the
// loop starts from (the training its `carry` continues) is promoted, and paired with the loop's
// last checkpoint, before that one's promotion, so the champion is the best policy the run found.
TEST_F(SpecTest, EveryShippedLoopPromotesTheCheckpointItStartsFromBeforeItsOwn) {
  int loops = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(ROBOLOOP_SOURCE_DIR) + "/configs/pipelines")) {
    const std::string file = entry.path().filename().string();
    auto loaded = LoadPipeline(entry.path().string(), {});
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    ValidationOptions options;
    options.protocols_dir = std::string(ROBOLOOP_SOURCE_DIR) + "/configs/protocols";
    auto plan = ValidatePipeline(*loaded, BuiltinStageKinds(), options);
    ASSERT_TRUE(plan.ok()) << plan.status();
    const v1::Pipeline& pipeline = loaded->pipeline;
    for (const v1::Stage& loop : pipeline.stages()) {
      if (loop.kind() != "loop") continue;
      ++loops;
      std::string start;
      for (const auto& [outer, inner] : loop.loop().carry()) {
        if (!StageWhere(pipeline, [&](const v1::Stage& s) { return s.name() == outer && s.kind() == "train"; }).empty()) {
          start = "${" + outer + ".checkpoint}";
        }
      }
      ASSERT_FALSE(start.empty()) << file << ": loop " << loop.name() << " continues no training";
      const std::string last = "${" + loop.name() + ".checkpoint}";
      const std::string promote_last = StageWhere(pipeline, [&](const v1::Stage& s) {
        return s.kind() == "promote" && s.promote().candidate() == last;
      });
      const std::string promote_start = StageWhere(pipeline, [&](const v1::Stage& s) {
        return s.kind() == "promote" && s.promote().candidate() == start;
      });
      const std::string paired = StageWhere(pipeline, [&](const v1::Stage& s) {
        return s.kind() == "compare" && s.compare().candidate() == last && s.compare().baseline() == start;
      });
      ASSERT_FALSE(promote_last.empty()) << file << ": no stage promotes " << last;
      EXPECT_FALSE(promote_start.empty()) << file << ": no stage promotes " << start << ", only " << last;
      EXPECT_FALSE(paired.empty()) << file << ": no compare stage of " << last << " against " << start;
      const std::set<std::string> before = Upstream(*plan, promote_last);
      EXPECT_TRUE(before.count(promote_start)) << file << ": " << promote_last << " may run before " << promote_start;
      EXPECT_TRUE(before.count(paired)) << file << ": " << promote_last << " may run before " << paired;
    }
  }
  EXPECT_GE(loops, 4) << "quickstart, push, reacher and vision each have a loop";
}

TEST_F(SpecTest, OverridesSetFieldsAndNameTheirMistakes) {
  auto loaded = LoadPipeline(Write(std::string(kLoop) + "vars: {model: m, seed: s}\n"),
                             {{"train.steps", "5000"}, {"improve.loop.max_iterations", "2"},
                                            {"vars.model", "x"}, {"feedback.evaluate.force", "true"}});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->pipeline.stages(1).train().steps(), 5000);
  EXPECT_EQ(loaded->pipeline.stages(2).loop().max_iterations(), 2);
  EXPECT_TRUE(loaded->pipeline.stages(2).loop().stages(0).evaluate().force());
  EXPECT_EQ(loaded->pipeline.vars().at("model"), "x");
  EXPECT_FALSE(loaded->pipeline.stages(0).has_loop());
  EXPECT_THAT(LoadPipeline(Write(kLoop), {{"train.stepz", "1"}}).status().message(),
              HasSubstr("TrainConfig has no field 'stepz'"));
  EXPECT_THAT(LoadPipeline(Write(kLoop), {{"train.steps", "many"}}).status().message(),
              HasSubstr("'many' is not a int64"));
  EXPECT_THAT(LoadPipeline(Write(kLoop), {{"nosuch.steps", "1"}}).status().message(), HasSubstr("no stage named 'nosuch'"));
  EXPECT_THAT(LoadPipeline(Write(std::string(kLoop) + "vars: {model: m, seed: s}\n"), {{"vars.modle", "x"}}).status().message(),
              HasSubstr("--set vars.modle=x: no pipeline variable 'modle' (known: model, seed)"));
  EXPECT_THAT(LoadPipeline(Write(kLoop), {{"vars.model", "x"}}).status().message(),
              HasSubstr("no pipeline variable 'model' (the pipeline declares no vars)"));
  EXPECT_THAT(ParseOverride("train.steps").status().message(), HasSubstr("expected PATH=VALUE"));
}

TEST_F(SpecTest, UnknownKeysAndTypeErrorsNameFileAndLine) {
  const std::string path = Write("stages:\n  - name: a\n    kind: collect\n    colect: {}\n");
  EXPECT_THAT(LoadPipeline(path, {}).status().message(), AllOf(HasSubstr(path + ":4:"), HasSubstr("colect")));
  const std::string typed = Write("stages:\n  - name: a\n    kind: collect\n    collect: {episodes: lots}\n");
  EXPECT_THAT(LoadPipeline(typed, {}).status().message(), HasSubstr(typed + ":4:"));
}

// The train stage's numbers get the range check `roboloop train` gives them, when the pipeline is validated.
TEST_F(SpecTest, TrainNumbersOutOfRangeAreNamedBeforeTheRun) {
  auto plan = Validate(
      "stages:\n  - name: t\n    kind: train\n    train: {dataset: d.hdf5, optimizer: {min_lr_ratio: -3}}\n");
  EXPECT_THAT(plan.status().message(),
              AllOf(HasSubstr("stage 't'"), HasSubstr("optimizer.min_lr_ratio must be in [0, 1], got -3")));
}

TEST_F(SpecTest, UnknownKindListsTheKnownOnes) {
  auto plan = Validate("stages:\n  - name: a\n    kind: deploy\n");
  EXPECT_THAT(plan.status().message(),
              AllOf(HasSubstr(":2: stage 'a': unknown kind 'deploy'"),
                    HasSubstr("known: collect, relabel, merge, train, evaluate, compare, promote, report, loop")));
  EXPECT_THAT(Validate("stages:\n  - name: a\n    kind: train\n    collect: {episodes: 1}\n").status().message(),
              HasSubstr("kind train needs its parameters under 'train:'"));
}

TEST_F(SpecTest, CyclesAreNamedStageByStage) {
  auto plan = Validate(R"(stages:
  - name: a
    kind: train
    train: {dataset: "${c.dataset}"}
  - name: b
    kind: merge
    merge: {datasets: ["${a.checkpoint}"]}
  - name: c
    kind: merge
    needs: [b]
    merge: {datasets: []}
)");
  EXPECT_THAT(plan.status().message(), HasSubstr("dependency cycle: a -> c -> b -> a"));
}

TEST_F(SpecTest, BadReferencesAreNamed) {
  EXPECT_THAT(Validate("stages:\n  - name: a\n    kind: train\n    train: {dataset: \"${nosuch.dataset}\"}\n").status().message(),
              HasSubstr("refers to unknown stage 'nosuch'"));
  EXPECT_THAT(Validate(R"(stages:
  - name: d
    kind: collect
    collect: {task: t, episodes: 1}
  - name: a
    kind: train
    train: {dataset: "${d.checkpoint}"}
)").status().message(),
              HasSubstr("a collect stage has no output 'checkpoint' (outputs: dataset)"));
  EXPECT_THAT(Validate("stages:\n  - name: a\n    kind: train\n    train: {model: \"${vars.m}\"}\n").status().message(),
              HasSubstr("no such pipeline variable"));
  std::string inside = kLoop;
  inside.replace(inside.find("${improve.checkpoint}"), 21, "${gate.evaluation}");
  EXPECT_THAT(Validate(inside).status().message(), HasSubstr("cannot refer to 'gate', which is inside loop 'improve'"));
  std::string until = kLoop;
  until.replace(until.find("${gate.success.lower} >= 0.85"), 29, "${train.checkpoint} >= 1");
  EXPECT_THAT(Validate(until).status().message(), HasSubstr("loop.until must test an output of a stage inside the loop"));
}

TEST_F(SpecTest, LoopCarryMustPairAnOuterStageWithAMatchingStageOfTheLoop) {
  auto with_carry = [](const std::string& carry) {
    std::string text = kLoop;
    text.replace(text.find("      stages:\n        - name: feedback"), 0, "      carry: " + carry + "\n");
    return text;
  };
  EXPECT_TRUE(Validate(with_carry("{train: train2}")).status().message().find("'train2' is not a stage of this loop") !=
              std::string::npos);
  EXPECT_THAT(Validate(with_carry("{train: gate}")).status().message(),
              HasSubstr("gate (evaluate) has no output 'checkpoint' that train (train) has"));
  EXPECT_THAT(Validate(with_carry("{nosuch: gate}")).status().message(), HasSubstr("refers to unknown stage 'nosuch'"));
  EXPECT_TRUE(Validate(with_carry("{}")).ok());
}

TEST_F(SpecTest, GateSeedsOverlappingCollectionOrFeedbackAreAnError) {
  std::string overlap = kLoop;
  overlap.replace(overlap.find("episodes: 100, first_episode: 0"), 31, "episodes: 100, first_episode: 950");
  EXPECT_THAT(Validate(overlap).status().message(),
              AllOf(HasSubstr("stage 'gate'"), HasSubstr("stage demos (collect)")));
  EXPECT_TRUE(Validate(std::string(kLoop) + "  - name: final\n    kind: evaluate\n"
                                            "    evaluate: {checkpoint: \"${improve.checkpoint}\", protocol: gate}\n").ok())
      << "evaluating under the gate's own protocol is the gate, not feedback";
  std::ofstream(dir_ + "/feedback.yaml") << "task: cartpole-swingup\nbase_seed: 0\nseed_start: 1050\nepisodes: 10\nmax_steps: 50\n" << kFullChunk;
  EXPECT_THAT(Validate(kLoop).status().message(), HasSubstr("stage feedback (feedback evaluation)"));
  EXPECT_THAT(Validate(R"(stages:
  - name: g
    kind: evaluate
    evaluate: {checkpoint: c, protocol: nosuch}
)").status().message(),
              AllOf(HasSubstr("stage 'g'"), HasSubstr("nosuch")));
}

// A protocol an evaluation would refuse is an error before anything runs, not after the
// training the stages before it spend.
TEST_F(SpecTest, AProtocolAnEvaluationWouldRefuseIsAValidationError) {
  std::ofstream(dir_ + "/feedback.yaml") << "task: cartpole-swingup\nbase_seed: 0\nseed_start: 5000\nepisodes: 10\n"
                                            "max_steps: 50\n";
  std::ofstream(dir_ + "/gate.yaml") << "task: cartpole-swingup\nbase_seed: 0\nseed_start: 1000\nepisodes: 0\n"
                                        "max_steps: 50\n" << kFullChunk;
  const std::string message(Validate(kLoop).status().message());
  EXPECT_THAT(message, HasSubstr("stage 'feedback': protocol 'feedback': execution.chunk.mode must be"));
  EXPECT_THAT(message, HasSubstr("stage 'gate': protocol 'gate': episodes must be >= 1"));
  EXPECT_THAT(message, HasSubstr("stage 'promote': protocol 'gate': episodes must be >= 1"));
}

// kLoop with `from` replaced by `to` (the text must be there).
std::string LoopWith(const std::string& from, const std::string& to) {
  std::string text = kLoop;
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

TEST_F(SpecTest, AFeedbackEvaluationThatKeepsFailuresMustNotShareAGatesSeeds) {
  const std::string feedback = "evaluate: {checkpoint: \"${train.checkpoint}\", protocol: feedback}";
  const std::string gate = "evaluate: {checkpoint: \"${train.checkpoint}\", protocol: gate}";
  EXPECT_TRUE(Validate(LoopWith(feedback, "evaluate: {checkpoint: c, protocol: feedback, keep_failures: true}")).ok());
  EXPECT_THAT(Validate(LoopWith(feedback, "evaluate: {checkpoint: c, protocol: gate, keep_failures: true}")).status().message(),
              AllOf(HasSubstr("stage 'gate'"), HasSubstr("stage feedback (feedback evaluation)")))
      << "feedback under the gate's protocol";
  const std::string kept = LoopWith(feedback, "evaluate: {checkpoint: c, protocol: feedback, keep_failures: true}");
  std::string gate_on_feedback = kept;
  gate_on_feedback.replace(gate_on_feedback.find(gate), gate.size(),
                           "evaluate: {checkpoint: \"${train.checkpoint}\", protocol: feedback}");
  EXPECT_THAT(Validate(gate_on_feedback).status().message(),
              AllOf(HasSubstr("stage 'gate'"), HasSubstr("stage feedback (feedback evaluation)")))
      << "the gate under the feedback protocol";
  EXPECT_THAT(Validate(kept, {{"promote.protocol", "feedback"}}).status().message(),
              AllOf(HasSubstr("stage 'promote'"), HasSubstr("stage feedback (feedback evaluation)")))
      << "a promotion under the feedback protocol";
}

// The lines of an error message.
std::vector<std::string> Lines(const absl::Status& status) {
  return absl::StrSplit(std::string(status.message()), '\n');
}

TEST_F(SpecTest, ValidationReportsEveryProblemOnALineOfItsOwn) {
  const std::string path = Write(R"(name: broken
stages:
  - name: demos
    kind: collect
    collect: {task: cartpole-swingup, episodes: 10}
  - name: demos
    kind: merge
    merge: {}
  - name: deploy
    kind: ship
  - name: train
    kind: train
    train: {dataset: "${demos.checkpoint}", model: "${vars.nosuch}", init_from: "${nosuch.checkpoint}"}
    retries: -1
  - name: merged
    kind: merge
    needs: [deploy, ghost]
    collect: {episodes: 1}
    merge: {datasets: ["${deploy.dataset}"]}
)");
  auto loaded = LoadPipeline(path, {});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ValidationOptions options;
  options.protocols_dir = dir_;
  const absl::Status status = ValidatePipeline(*loaded, BuiltinStageKinds(), options).status();
  EXPECT_TRUE(absl::IsInvalidArgument(status));
  const std::vector<std::string> lines = Lines(status);
  EXPECT_THAT(lines, ElementsAre(HasSubstr(":6: stage 'demos': is defined twice"),
                                 HasSubstr(":9: stage 'deploy': unknown kind 'ship'"),
                                 HasSubstr(":11: stage 'train': retries, backoff_s and timeout_s must not be negative"),
                                 HasSubstr(":15: stage 'merged': a stage of kind merge cannot have 'collect:' parameters"),
                                 HasSubstr(":11: stage 'train': ${demos.checkpoint}: a collect stage has no output 'checkpoint'"),
                                 HasSubstr(":11: stage 'train': ${vars.nosuch}: no such pipeline variable"),
                                 HasSubstr(":11: stage 'train': refers to unknown stage 'nosuch'"),
                                 HasSubstr(":15: stage 'merged': refers to unknown stage 'ghost'")))
      << status.message();
  for (const std::string& line : lines) EXPECT_THAT(line, ::testing::StartsWith(path + ":"));
}

TEST_F(SpecTest, EveryUnknownKeyAndTypeErrorOfTheFileIsReported) {
  const std::string path = Write(R"(name: typos
stages:
  - name: a
    kind: collect
    colect: {}
  - name: b
    kind: collect
    collect: {episodes: lots, tusk: x}
descripton: misspelt
)");
  const absl::Status status = LoadPipeline(path, {}).status();
  EXPECT_THAT(Lines(status), ElementsAre(AllOf(HasSubstr(path + ":5:"), HasSubstr("unknown key 'colect'")),
                                         AllOf(HasSubstr(path + ":8:"), HasSubstr("'lots'")),
                                         AllOf(HasSubstr(path + ":8:"), HasSubstr("unknown key 'tusk'")),
                                         AllOf(HasSubstr(path + ":9:"), HasSubstr("unknown key 'descripton'"))))
      << status.message();
}

TEST_F(SpecTest, DuplicateAndMalformedNamesAreRefused) {
  EXPECT_THAT(Validate("stages:\n  - {name: a, kind: report, report: {}}\n  - {name: a, kind: report, report: {}}\n")
                  .status().message(),
              HasSubstr("stage 'a': is defined twice"));
  EXPECT_THAT(Validate("stages:\n  - {name: 1a, kind: report, report: {}}\n").status().message(),
              HasSubstr("must start with a letter"));
}

// A stage left out of the plan for its name is still checked: its kind, parameters, protocol,
// needs and references, and a loop's body and condition, are reported with the name in one go.
TEST_F(SpecTest, AStageWithADuplicateOrBadNameIsCheckedAsWell) {
  const std::string path = Write(R"(name: twice
stages:
  - name: demos
    kind: collect
    collect: {task: cartpole-swingup, episodes: 10}
  - name: demos
    kind: evaluate
    needs: [phantom]
    evaluate: {checkpoint: "${ghost.checkpoint}", protocol: nosuch}
    retries: -1
  - name: demos
    kind: ship
  - name: 1bad
    kind: merge
    merge: {datasets: ["${demos.checkpoint}"]}
  - name: improve
    kind: loop
    loop:
      max_iterations: 1
      stages:
        - {name: gate, kind: evaluate, evaluate: {checkpoint: c, protocol: gate}}
  - name: improve
    kind: loop
    loop:
      max_iterations: 0
      until: "${nosuch.success.lower} >= 0.5"
      stages:
        - {name: gate, kind: evaluate, evaluate: {checkpoint: c, protocol: gate}}
        - {name: tune, kind: train, train: {dataset: "${lost.dataset}", steps: 10}}
)");
  auto loaded = LoadPipeline(path, {});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ValidationOptions options;
  options.protocols_dir = dir_;
  const absl::Status status = ValidatePipeline(*loaded, BuiltinStageKinds(), options).status();
  EXPECT_THAT(Lines(status),
              ElementsAre(HasSubstr(":6: stage 'demos': is defined twice (first at line 3)"),
                          HasSubstr(":6: stage 'demos': retries, backoff_s and timeout_s must not be negative"),
                          HasSubstr(":6: stage 'demos': protocol 'nosuch' not found"),
                          HasSubstr(":11: stage 'demos': is defined twice (first at line 3)"),
                          HasSubstr(":11: stage 'demos': unknown kind 'ship'"),
                          HasSubstr(":13: stage '1bad': a stage name must start with a letter"),
                          HasSubstr(":22: stage 'improve': is defined twice (first at line 16)"),
                          HasSubstr(":22: stage 'improve': loop.max_iterations must be at least 1"),
                          HasSubstr(":28: stage 'gate': is defined twice (first at line 21)"),
                          HasSubstr(":6: stage 'demos': refers to unknown stage 'phantom'"),
                          HasSubstr(":6: stage 'demos': refers to unknown stage 'ghost'"),
                          HasSubstr(":13: stage '1bad': ${demos.checkpoint}: a collect stage has no output 'checkpoint'"),
                          HasSubstr(":29: stage 'tune': refers to unknown stage 'lost'"),
                          HasSubstr(":22: stage 'improve': loop.until must test an output of a stage inside the loop")))
      << status.message();
}

TEST_F(SpecTest, NonFiniteNumbersAndBadRanksAreRefused) {
  EXPECT_THAT(Validate(kLoop, {{"train.optimizer.lr", "nan"}}).status().message(),
              HasSubstr("stage 'train': config key optimizer.lr (--lr) must be a finite number > 0, got nan"));
  EXPECT_THAT(Validate(kLoop, {{"train.backoff_s", "nan"}}).status().message(),
              HasSubstr("stage 'train': backoff_s must be a finite number"));
  EXPECT_THAT(Validate(kLoop, {{"feedback.timeout_s", "inf"}}).status().message(),
              HasSubstr("stage 'feedback': timeout_s must be a finite number"));
  EXPECT_THAT(Validate(kLoop, {{"train.ranks", "-1"}}).status().message(),
              HasSubstr("stage 'train': ranks must be at least 1, not -1"));
  EXPECT_THAT(Validate(kLoop, {{"demos.ranks", "2"}}).status().message(),
              HasSubstr("stage 'demos': a stage of kind collect takes no 'ranks'"));
  EXPECT_TRUE(Validate(kLoop, {{"train.ranks", "2"}}).ok());
}

TEST_F(SpecTest, RanksGivenAsZeroAreRefusedLikeAnyNumberBelowOne) {
  EXPECT_THAT(Validate(LoopWith("steps: 10}\n  - name: improve", "steps: 10}\n    ranks: 0\n  - name: improve"))
                  .status().message(),
              HasSubstr(":6: stage 'train': ranks must be at least 1, not 0"));
  EXPECT_THAT(Validate(kLoop, {{"train.ranks", "0"}}).status().message(),
              HasSubstr("stage 'train': ranks must be at least 1, not 0"));
  EXPECT_THAT(Validate(kLoop, {{"demos.ranks", "0"}}).status().message(),
              HasSubstr("stage 'demos': a stage of kind collect takes no 'ranks'"));
}

// The paths ("a.b") of the double fields of `type` and its message fields, repeated ones left out.
std::vector<std::string> DoubleFields(const google::protobuf::Descriptor* type, const std::string& prefix = "") {
  std::vector<std::string> paths;
  for (int i = 0; i < type->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* field = type->field(i);
    if (field->is_repeated()) continue;
    if (field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE) paths.push_back(prefix + field->name());
    if (field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) {
      for (std::string& inner : DoubleFields(field->message_type(), prefix + field->name() + ".")) paths.push_back(inner);
    }
  }
  return paths;
}

TEST_F(SpecTest, ANonFiniteTrainNumberIsReportedOnceByTheTrainChecks) {
  const std::vector<std::string> fields = DoubleFields(v1::TrainConfig::descriptor());
  ASSERT_THAT(fields, ::testing::Contains("optimizer.lr"));
  for (const std::string& field : fields) {
    const absl::Status status = Validate(kLoop, {{"train." + field, "nan"}}).status();
    EXPECT_THAT(Lines(status), ElementsAre(AllOf(HasSubstr(":6: stage 'train': config key " + field), HasSubstr("got nan"))))
        << status.message();
  }
}

TEST_F(SpecTest, EveryLineOfAKindsParameterCheckNamesTheFileAndStage) {
  const absl::Status status = Validate(kLoop, {{"train.steps", "-5"}, {"train.batch_size", "-1"}}).status();
  EXPECT_THAT(Lines(status), ElementsAre(HasSubstr(":6: stage 'train': config key steps (--steps) must be"),
                                         HasSubstr(":6: stage 'train': config key batch_size (--batch-size) must be")))
      << status.message();
}

TEST_F(SpecTest, NameErrorsNameTheLineOfTheirOwnEntry) {
  const std::string path = Write(R"(name: names
stages:
  - name: demos
    kind: bogus
  - name: demos
    kind: report
    report: {}
  - name: 1a
    kind: report
    report: {}
  - kind: report
    report: {}
  - name: outer
    kind: loop
    loop:
      max_iterations: 1
      stages:
        - name: demos
          kind: report
          report: {}
)");
  auto loaded = LoadPipeline(path, {});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const absl::Status status = ValidatePipeline(*loaded, BuiltinStageKinds(), ValidationOptions()).status();
  EXPECT_THAT(Lines(status), ElementsAre(HasSubstr(":3: stage 'demos': unknown kind 'bogus'"),
                                         HasSubstr(":5: stage 'demos': is defined twice (first at line 3)"),
                                         HasSubstr(":8: stage '1a': a stage name must start with a letter"),
                                         HasSubstr(":11: stage '': has no name"),
                                         HasSubstr(":18: stage 'demos': is defined twice (first at line 3)")))
      << status.message();
  for (const std::string& line : Lines(status)) EXPECT_THAT(line, ::testing::StartsWith(path + ":"));
}

TEST_F(SpecTest, EveryBadCarryEntryIsReported) {
  const absl::Status status =
      Validate(LoopWith("      stages:\n        - name: feedback",
                        "      carry: {train: gate, demos: nosuch, ghost: finetune}\n      stages:\n        - name: feedback"))
          .status();
  EXPECT_THAT(Lines(status), ElementsAre(HasSubstr(":9: stage 'improve': loop.carry demos: 'nosuch' is not a stage of this loop"),
                                         HasSubstr(":9: stage 'improve': refers to unknown stage 'ghost'"),
                                         HasSubstr(":9: stage 'improve': loop.carry train: gate (evaluate) has no output")))
      << status.message();
}

TEST_F(SpecTest, ALoopConditionMustTestANumber) {
  const std::string condition = "${gate.success.lower} >= 0.85";
  EXPECT_THAT(Validate(LoopWith(condition, "${gate.evaluation} >= 0.85")).status().message(),
              HasSubstr(":9: stage 'improve': loop.until tests ${gate.evaluation}, which is not a number (numeric outputs "
                        "of kind evaluate: return.lower, return.mean, return.upper, success.lower, success.rate, success.upper)"));
  EXPECT_THAT(Validate(LoopWith(condition, "${finetune.checkpoint} >= 1")).status().message(),
              HasSubstr("loop.until tests ${finetune.checkpoint}, which is not a number (numeric outputs of kind train: none)"));
  EXPECT_TRUE(Validate(LoopWith(condition, "${gate.return.mean} > 10")).ok());
}

TEST_F(SpecTest, ALoopOutputNoStageOfItsBodyProducesIsAnError) {
  const std::string finetune = "        - name: finetune\n          kind: train\n"
                               "          train: {dataset: d.hdf5, init_from: \"${train.checkpoint}\", steps: 10}\n";
  EXPECT_THAT(Validate(LoopWith(finetune, "")).status().message(),
              HasSubstr(":22: stage 'promote': ${improve.checkpoint}: no stage of loop 'improve' has an output 'checkpoint'"));
  EXPECT_THAT(Validate(LoopWith(finetune, "        - name: inner\n          kind: loop\n          loop:\n"
                                          "            max_iterations: 1\n"
                                          "            stages: [{name: deeper, kind: report, report: {}}]\n"))
                  .status().message(),
              HasSubstr("no stage of loop 'improve' has an output 'checkpoint'"))
      << "a loop inside the loop whose own stages make no checkpoint";
  EXPECT_TRUE(Validate(std::string(kLoop) + "  - {name: r, kind: report, report: {model: \"${improve.iterations}\"}}\n").ok());
}

TEST_F(SpecTest, AKeyTwiceInOneMappingIsRefusedWithItsLine) {
  const std::string path = Write("name: twice\nstages:\n  - name: a\n    kind: collect\n    kind: merge\n    merge: {}\n");
  EXPECT_THAT(LoadPipeline(path, {}).status().message(), HasSubstr(path + ":5:5: duplicate key 'kind'"));
}

TEST_F(SpecTest, APipelineWithoutStagesIsAnErrorNamingTheFile) {
  const std::string empty = Write("");
  auto loaded = LoadPipeline(empty, {});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_THAT(ValidatePipeline(*loaded, BuiltinStageKinds(), ValidationOptions()).status().message(),
              HasSubstr(empty + ": the pipeline has no stages"));
  EXPECT_THAT(Validate("name: idle\nstages: []\n").status().message(), HasSubstr(": the pipeline has no stages"));
}

TEST_F(SpecTest, APipelineWithoutANameIsNamedAfterItsFile) {
  const std::string path = Write("stages:\n  - {name: demos, kind: collect, collect: {task: reach, episodes: 2}}\n");
  auto loaded = LoadPipeline(path, {});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->pipeline.name(), std::filesystem::path(path).stem().string());
  auto named = LoadPipeline(Write("name: mine\nstages: []\n"), {});
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ(named->pipeline.name(), "mine");
}

}  // namespace
}  // namespace roboloop::pipeline
