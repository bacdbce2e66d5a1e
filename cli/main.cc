// The `roboloop` command line: global flags and one subcommand tree per module.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "cli/bench.h"
#include "cli/cli.h"
#include "cli/data.h"
#include "cli/eval.h"
#include "cli/export.h"
#include "cli/pipeline.h"
#include "cli/registry.h"
#include "cli/report.h"
#include "cli/run.h"
#include "cli/serve.h"
#include "cli/sim.h"
#include "cli/train.h"
#include "cli/usage_hints.h"
#include "cli/version.h"
#include "common/logging.h"

namespace {

// When ROBOLOOP_MAPS_REPORT names a file, the process copies /proc/self/maps there at exit,
// so tests can see which shared libraries a command mapped (the torch boundary test).
void ReportMapsAtExitIfAsked() {
  if (std::getenv("ROBOLOOP_MAPS_REPORT") == nullptr) return;
  std::atexit([] {
    std::ifstream maps("/proc/self/maps");
    std::ofstream out(std::getenv("ROBOLOOP_MAPS_REPORT"));
    out << maps.rdbuf();
  });
}

}  // namespace

int main(int argc, char** argv) {
  using namespace roboloop::cli;
  ReportMapsAtExitIfAsked();
  // Line-buffered stdout, so progress and benchmark lines show up as they happen in pipes too.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  roboloop::InitLogging();

  CLI::App app{"roboloop: collect, train, simulate, evaluate and promote robot policies"};
  app.require_subcommand(0, 1);
  bool version = false;
  bool verbose = false;
  std::string log_level = "info";
  app.add_flag("--version", version, "Print the version and exit");
  app.add_flag("-v,--verbose", verbose, "With --version: also load LibTorch and report it");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
      ->capture_default_str();

  CommandRunner runner;
  AddRegistryCommands(app, runner);
  AddDataCommands(app, runner);
  AddSimCommands(app, runner);
  AddEvalCommands(app, runner);
  CLI::App* serve = AddServeCommands(app, runner);
  AddServeSimCommand(serve, runner);
  AddServeTrainCommand(serve, runner);
  AddBenchCommands(app, runner);
  AddTrainCommand(app, runner, argc, argv);
  AddPipelineCommands(app, runner);
  AddRunCommands(app, runner);
  AddReportCommand(app, runner);
  AddExportCommand(app, runner);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ExtrasError& e) {
    // Files left over after an option that takes one value: say how to pass several.
    const auto takes_patterns = [&runner](const CLI::Option& option) { return runner.TakesPatterns(option); };
    const std::string hint = UnexpectedFilesHint(app, std::vector<std::string>(argv + 1, argv + argc), takes_patterns);
    // Else positionals the command does not take: say which command, which arguments, and its usage.
    const std::string unexpected = hint.empty() ? UnexpectedPositionalsMessage(app) : "";
    if (!unexpected.empty()) {
      std::fputs(unexpected.c_str(), stderr);
      return kExitUsage;
    }
    // Else a mistyped option or command: the nearest known name.
    const std::string said = hint.empty() ? DidYouMeanHint(app) : hint;
    app.exit(said.empty() ? e : CLI::ExtrasError(std::string(e.what()) + "\n" + said, e.get_exit_code()));
    return kExitUsage;
  } catch (const CLI::RequiredError& e) {
    // A command made of subcommands given none of them: which words are not, and the nearest names.
    const bool no_subcommand = std::string(e.what()) == CLI::RequiredError::Subcommand(1).what();
    const std::string unexpected = no_subcommand ? UnexpectedPositionalsMessage(app) : "";
    if (!unexpected.empty()) {
      std::fputs(unexpected.c_str(), stderr);
      return kExitUsage;
    }
    const std::string hint = DidYouMeanHint(app);
    app.exit(hint.empty() ? e : CLI::RequiredError(std::string(e.what()) + "\n" + hint, e.get_exit_code()));
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  if (absl::Status s = roboloop::SetLogLevel(log_level); !s.ok()) {
    std::fprintf(stderr, "roboloop: %s\n", std::string(s.message()).c_str());
    return kExitUsage;
  }
  if (version) {
    absl::Status s = PrintVersion(verbose);
    if (!s.ok()) std::fprintf(stderr, "roboloop: %s\n", std::string(s.message()).c_str());
    return s.ok() ? kExitOk : kExitError;
  }
  if (!runner.HasAction()) {
    std::printf("%s", app.help().c_str());
    return kExitUsage;
  }
  return runner.Run();
}
