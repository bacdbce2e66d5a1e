// Pipeline specs (issue 8, req 1-2): loading a pipeline YAML with `--set` overrides, and the
// validation that runs before anything does — stage names and kinds, parameters of the right
// kind, references to other stages' outputs, dependency cycles, loop conditions, and seed
// ranges of evaluation gates that must be disjoint from the seeds used for collection and
// feedback. Every error names the file and the stage's line, and every error is reported: one
// line each. Torch-free.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pipeline/stage_kind.h"
#include "roboloop/v1/eval.pb.h"
#include "roboloop/v1/pipeline.pb.h"

namespace roboloop::pipeline {

// One `--set PATH=VALUE`: `<stage>.<field>[.<field>...]` (fields of the stage's kind
// parameters, or retries/backoff_s/timeout_s of the stage) or `vars.<name>`.
struct Override {
  std::string path;
  std::string value;
};

// Parses "PATH=VALUE"; InvalidArgument when there is no '=' or the path is empty.
absl::StatusOr<Override> ParseOverride(const std::string& text);

// `earlier` then `later` ("PATH=VALUE" each), without the entries of `earlier` whose path
// `later` sets again: applied in order, a later value of a path wins.
std::vector<std::string> OverridesOnTop(const std::vector<std::string>& earlier, const std::vector<std::string>& later);

// A parsed pipeline and where its stages are in the file.
struct LoadedPipeline {
  v1::Pipeline pipeline;                     // with overrides applied
  std::string source;                        // the file, for messages
  std::string text;                          // the file's contents as read
  // The line of each stage's entry (1-based), depth first: a loop's stages right after the loop.
  std::vector<int> stage_lines;
  std::vector<int> task_file_lines;          // line of each task_files entry (1-based), when known
};

// Reads and parses `path` (every unknown key and type error, and a key a mapping holds twice, is
// a line of the error, with file:line:column), then applies `overrides` in order (an unknown
// stage or field, or a value of the wrong type, is an error naming the override). A pipeline
// without a name is named after the file (its name without the extension).
absl::StatusOr<LoadedPipeline> LoadPipeline(const std::string& path,
                                            const std::vector<Override>& overrides);

// The pipeline's task_files, relative ones taken relative to the pipeline file's folder.
std::vector<std::string> TaskFiles(const LoadedPipeline& loaded);

// The protocol a stage names (a protocol name or a YAML path), for the seed checks; its errors name the protocol.
using ProtocolLoader = std::function<absl::StatusOr<v1::Protocol>(const std::string& name_or_path)>;

// Settings of validation.
struct ValidationOptions {
  std::string protocols_dir = "configs/protocols";  // where named protocols live
  // Where the seed checks read the protocols stages name; empty = eval::LoadProtocol under protocols_dir. A run on
  // remote services asks its eval service, which evaluates under them (RunPipelineFile, pipeline/runner.h).
  ProtocolLoader load_protocol;
};

// The order stages may run in: each level's stages depend only on earlier levels.
struct Plan {
  const StageKindRegistry* kinds = nullptr;                  // the kinds it was validated against
  std::vector<std::vector<std::string>> levels;              // top-level stages
  std::map<std::string, std::set<std::string>> depends_on;   // every stage -> its direct deps (same scope)
};

// Validates `loaded` against `kinds` (which must outlive the plan) and returns its plan. Errors are InvalidArgument
// with one line "<file>:<line>: stage '<name>': <what>" for every problem found — an unknown kind lists the known ones, a cycle is
// named stage by stage ("a -> b -> a"), an unknown stage or output in a reference is named
// with the outputs that exist, gate seeds overlapping collection or feedback seeds name both
// ranges.
absl::StatusOr<Plan> ValidatePipeline(const LoadedPipeline& loaded, const StageKindRegistry& kinds,
                                      const ValidationOptions& options);

}  // namespace roboloop::pipeline
