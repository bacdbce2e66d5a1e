#include "cli/pipeline.h"

#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "pipeline/runner.h"
#include "pipeline/spec.h"
#include "pipeline/stage_kinds/builtin.h"

namespace roboloop::cli {
namespace {

struct PipelineFlags {
  std::string file;
  std::vector<std::string> sets;
  std::string protocols_dir = "configs/protocols";
};

absl::Status Validate(const PipelineFlags& flags) {
  std::vector<pipeline::Override> overrides;
  for (const std::string& set : flags.sets) {
    ROBOLOOP_ASSIGN_OR_RETURN(pipeline::Override o, pipeline::ParseOverride(set));
    overrides.push_back(o);
  }
  ROBOLOOP_ASSIGN_OR_RETURN(pipeline::LoadedPipeline loaded, pipeline::LoadPipeline(flags.file, overrides));
  pipeline::ValidationOptions options;
  options.protocols_dir = flags.protocols_dir;
  ROBOLOOP_ASSIGN_OR_RETURN(pipeline::Plan plan, pipeline::ValidatePipeline(loaded, pipeline::BuiltinStageKinds(), options));
  ROBOLOOP_RETURN_IF_ERROR(pipeline::CheckTaskFiles(loaded));
  std::printf("%s: pipeline %s is valid; %zu stages in %zu levels\n", flags.file.c_str(),
              loaded.pipeline.name().c_str(), plan.depends_on.size(), plan.levels.size());
  for (size_t i = 0; i < plan.levels.size(); ++i) {
    std::printf("  level %zu: %s\n", i, absl::StrJoin(plan.levels[i], ", ").c_str());
  }
  return absl::OkStatus();
}

}  // namespace

CLI::Validator OverrideText() {
  return CLI::Validator(
      [](std::string& text) {
        if (pipeline::ParseOverride(text).ok()) return std::string();
        return absl::StrCat("'", text, "' is not PATH=VALUE, e.g. train.steps=5000");
      },
      "PATH=VALUE");
}

void AddPipelineCommands(CLI::App& app, CommandRunner& runner) {
  auto flags = std::make_shared<PipelineFlags>();
  CLI::App* pipeline = app.add_subcommand("pipeline", "Pipeline specs (configs/pipelines/*.yaml)");
  pipeline->require_subcommand(1);
  CLI::App* validate = pipeline->add_subcommand("validate", "Check a pipeline spec and print its plan");
  validate->add_option("FILE", flags->file, "Pipeline YAML")->required();
  validate->add_option("--set", flags->sets, "Override PATH=VALUE (e.g. train.steps=5000; repeatable)")
      ->check(OverrideText());
  validate->add_option("--protocols-dir", flags->protocols_dir, "Where named protocols live")->capture_default_str();
  runner.Bind(validate, [flags] { return Validate(*flags); });
}

}  // namespace roboloop::cli
