// Inspecting runs as a user would (`runs`, `status`, `logs`): the real binary, exit code and
// message for a mistyped --root; the status table's rows; `--format json` of runs and status;
// `run --resume` from another folder, and of a run recorded with a path relative to its folder;
// errors of the embedded services, which name them, not their sockets; the summary of a run
// whose loop ended unmet.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/table.h"
#include "common/fs.h"
#include "common/sha256.h"
#include "common/sqlite.h"
#include "common/store_layout.h"
#include "pipeline/run_store.h"
#include "pipeline/runner.h"
#include "tests/util/subprocess.h"

namespace roboloop {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::ProgramResult;
using testing::RunRoboloop;

TEST(CliRunInspectTest, ARootWithoutARunStoreIsAnErrorAndStaysAbsent) {
  const std::string typo = testing::MakeTempDir("inspect") + "/typo";
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"runs"}, {"status"}, {"logs", "some-run"}}) {
    std::vector<std::string> args = command;
    args.insert(args.end(), {"--root", typo});
    const ProgramResult result = RunRoboloop(args);
    EXPECT_EQ(result.exit_code, 1) << command[0] << result.out << result.err;
    EXPECT_THAT(result.err, HasSubstr("--root " + typo + " holds no pipeline runs")) << command[0];
    EXPECT_FALSE(PathExists(typo)) << command[0] << " created the folder";
  }
}

// A --set that is not PATH=VALUE is a usage error (exit 2) naming the flag, before any run is recorded.
TEST(CliRunInspectTest, ASetWithoutAnEqualsSignIsAUsageError) {
  const std::string dir = testing::MakeTempDir("set-usage");
  ASSERT_TRUE(WriteFileAtomic(dir + "/p.yaml", "name: p\nstages:\n  - {name: demos, kind: collect, "
                                               "collect: {task: cartpole-swingup, policy: random, episodes: 2}}\n")
                  .ok());
  for (const std::vector<std::string>& command : {std::vector<std::string>{"pipeline", "validate", dir + "/p.yaml"},
                                                  {"run", dir + "/p.yaml", "--root", dir + "/store"}}) {
    std::vector<std::string> args = command;
    args.insert(args.end(), {"--set", "garbage"});
    const ProgramResult result = RunRoboloop(args);
    EXPECT_EQ(result.exit_code, 2) << command[0] << result.err;
    EXPECT_THAT(result.err, HasSubstr("--set: 'garbage' is not PATH=VALUE")) << command[0];
  }
  EXPECT_FALSE(PathExists(dir + "/store")) << "a usage error records no run";
}

// The id of the run `roboloop run` started, from its first line "run <id>: ...".
std::string StartedRunId(const ProgramResult& result) {
  const size_t start = result.out.find("run ");
  const size_t end = result.out.find(':', start);
  return start == std::string::npos || end == std::string::npos ? "" : result.out.substr(start + 4, end - start - 4);
}

// A temp folder holding p.yaml (one collect stage of a random policy), its store root `root` and
// an empty folder `elsewhere` beside it.
struct ResumeFolders {
  std::string dir;
  std::string root;
  std::string elsewhere;
};

ResumeFolders MakeResumeFolders(const std::string& name) {
  const std::string dir = testing::MakeTempDir(name);
  const ResumeFolders folders{dir, dir + "/store", dir + "/elsewhere"};
  EXPECT_TRUE(MakeDirs(folders.elsewhere).ok());
  EXPECT_TRUE(WriteFileAtomic(dir + "/p.yaml", "name: p\nstages:\n  - {name: demos, kind: collect, "
                                               "collect: {task: cartpole-swingup, policy: random, episodes: 2}}\n")
                  .ok());
  return folders;
}

TEST(CliRunInspectTest, AResumeFindsItsPipelineFileFromAnyFolder) {
  const auto [dir, root, elsewhere] = MakeResumeFolders("resume-folder");
  const std::string binary = testing::RoboloopBinary();
  const ProgramResult failed =
      testing::RunProgram({binary, "run", "p.yaml", "--root", root, "--set", "demos.task=nosuch"}, {}, dir);
  ASSERT_EQ(failed.exit_code, 1) << failed.out << failed.err;
  const std::string run = StartedRunId(failed);
  ASSERT_FALSE(run.empty()) << failed.out;

  const ProgramResult named =
      testing::RunProgram({binary, "run", "../p.yaml", "--resume", run, "--root", root}, {}, elsewhere);
  EXPECT_EQ(named.exit_code, 1) << named.out << named.err;
  EXPECT_THAT(named.err, HasSubstr("unknown task 'nosuch'")) << "the same file by another relative path is the run's own";
  const ProgramResult resumed = testing::RunProgram(
      {binary, "run", "--resume", run, "--root", root, "--set", "demos.task=cartpole-swingup"}, {}, elsewhere);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_THAT(RunRoboloop({"runs", "--root", root}).out, HasSubstr(pipeline::RecordedPath(dir + "/p.yaml")));
}

// A stage's error names the embedded service it came from as the user knows it, never the
// private unix socket under <root>/run/ the service listens on.
TEST(CliRunInspectTest, EmbeddedServiceErrorsNameTheServiceNotItsSocket) {
  const std::string dir = testing::MakeTempDir("embedded-names");
  ASSERT_TRUE(WriteFileAtomic(dir + "/gate.yaml", "task: cartpole-swingup\nepisodes: 2\nmax_steps: 5\n"
                                                  "execution: {chunk: {mode: FULL_CHUNK}}\n")
                  .ok());
  const std::vector<std::pair<std::string, std::string>> stages = {
      {"{name: demos, kind: collect, collect: {task: cartpole-swingup, policy: nosuch@latest, episodes: 2}}",
       "Collect to the embedded simulation service: checkpoint nosuch@latest"},
      {"{name: fit, kind: train, train: {dataset: nosuch:v1, model: m, steps: 2}}",
       "Train to the embedded training service: "},
      {"{name: gate, kind: evaluate, evaluate: {checkpoint: nosuch@latest, protocol: gate.yaml}}",
       "Evaluate to the embedded evaluation service: checkpoint nosuch@latest"}};
  for (const auto& [stage, error] : stages) {
    ASSERT_TRUE(WriteFileAtomic(dir + "/p.yaml", "name: p\nstages:\n  - " + stage + "\n").ok());
    const ProgramResult failed =
        testing::RunProgram({testing::RoboloopBinary(), "run", "p.yaml", "--root", dir + "/store"}, {}, dir);
    EXPECT_EQ(failed.exit_code, 1) << stage << failed.out << failed.err;
    EXPECT_THAT(failed.err, HasSubstr(error)) << stage;
    EXPECT_THAT(failed.out + failed.err, Not(HasSubstr(".sock"))) << stage;
  }
}

// A failed run of `dir`/p.yaml as roboloop recorded runs before they kept absolute paths: the
// path relative to the folder it was started in; returns its id.
std::string OldRunWithARelativePath(const std::string& root, const std::string& dir) {
  auto store = pipeline::RunStore::Open(StoreLayout(root).PipelineRuns());
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return "";
  const absl::StatusOr<std::string> text = ReadFile(dir + "/p.yaml");
  EXPECT_TRUE(text.ok()) << text.status();
  pipeline::RunSettings settings;
  settings.spec_sha256 = Sha256Hex(text.value_or(""));
  const std::string id = (*store)->CreateRun("p", "p.yaml", {}, settings).value();
  EXPECT_TRUE((*store)->FinishRun(id, "failed", "stage demos failed").ok());
  return id;
}

TEST(CliRunInspectTest, ARunRecordedWithARelativePathSaysWhereToResumeIt) {
  const auto [dir, root, elsewhere] = MakeResumeFolders("resume-relative");
  ASSERT_TRUE(WriteFileAtomic(elsewhere + "/q.yaml", "name: q\nstages: []\n").ok());
  const std::string binary = testing::RoboloopBinary();
  const std::string run = OldRunWithARelativePath(root, dir);

  const ProgramResult lost = testing::RunProgram({binary, "run", "--resume", run, "--root", root}, {}, elsewhere);
  EXPECT_EQ(lost.exit_code, 2) << lost.out << lost.err;
  EXPECT_THAT(lost.err, HasSubstr("run " + run + " was recorded with the relative pipeline path p.yaml"));
  EXPECT_THAT(lost.err, HasSubstr("resume it from the folder it was started in, or pass the file"));
  const ProgramResult other =
      testing::RunProgram({binary, "run", "q.yaml", "--resume", run, "--root", root}, {}, elsewhere);
  EXPECT_EQ(other.exit_code, 2) << other.out << other.err;
  EXPECT_THAT(other.err, HasSubstr("--resume " + run + " runs p.yaml, not q.yaml"));

  const ProgramResult resumed = testing::RunProgram({binary, "run", "--resume", run, "--root", root}, {}, dir);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_THAT(RunRoboloop({"runs", "--root", root}).out, HasSubstr(pipeline::RecordedPath(dir + "/p.yaml")))
      << "the resumed run records the absolute path";

  const std::string passed_run = OldRunWithARelativePath(root, dir);
  const ProgramResult passed =
      testing::RunProgram({binary, "run", "../p.yaml", "--resume", passed_run, "--root", root}, {}, elsewhere);
  EXPECT_EQ(passed.exit_code, 0) << passed.out << passed.err;
}

// A run whose loop ends without its condition prints the summary a finished run prints (the
// iterations with their gate figures, what the stages that finished say), then says the loop
// ended unmet (exit 3).
TEST(CliRunInspectTest, AnUnmetLoopPrintsTheRunSummary) {
  const std::string dir = testing::MakeTempDir("unmet-summary");
  ASSERT_TRUE(WriteFileAtomic(dir + "/gate.yaml", "task: cartpole-swingup\nseed_start: 1000\nepisodes: 2\n"
                                                  "max_steps: 5\nexecution: {chunk: {mode: FULL_CHUNK}}\n")
                  .ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/p.yaml",
                              "name: p\nstages:\n"
                              "  - {name: demos, kind: collect, collect: {task: cartpole-swingup, episodes: 2, max_steps: 5}}\n"
                              "  - {name: train, kind: train, train: {dataset: '${demos.dataset}', model: m, steps: 2, "
                              "batch_size: 4}}\n"
                              "  - name: improve\n    kind: loop\n    loop:\n      max_iterations: 1\n"
                              "      until: ${gate.success.lower} >= 1.5\n      stages:\n"
                              "        - {name: gate, kind: evaluate, evaluate: {checkpoint: '${train.checkpoint}', "
                              "protocol: gate.yaml}}\n")
                  .ok());
  const ProgramResult run =
      testing::RunProgram({testing::RoboloopBinary(), "run", "p.yaml", "--root", dir + "/store"}, {}, dir);
  EXPECT_EQ(run.exit_code, 3) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("run " + StartedRunId(run) + " of p ended: loop improve ran 1 iteration(s) without "
                                 "meeting its condition ${gate.success.lower} >= 1.5"));
  EXPECT_THAT(run.out, HasSubstr("  improve: 1 iteration(s)\n"));
  EXPECT_THAT(run.out, HasSubstr("  improve[1].gate: gate.yaml success "));
  EXPECT_THAT(run.err, HasSubstr("condition not met"));
}

TEST(CliRunInspectTest, ACellWithLineBreaksStaysOnItsRow) {
  cli::Table table({"STAGE", "OUTPUTS / ERROR"});
  table.AddRow({"train", "INTERNAL: first line\nsecond line\n"});
  table.AddRow({"eval", "ok"});
  EXPECT_EQ(table.Render(), "STAGE  OUTPUTS / ERROR\n"
                            "train  INTERNAL: first line | second line\n"
                            "eval   ok\n");
}

// A store under `root` with one failed run of pipeline "demo" whose stage "collect" finished with
// output dataset "d1" and stage "train" failed; returns the run's id.
std::string StoreWithOneRun(const std::string& root) {
  auto store = pipeline::RunStore::Open(StoreLayout(root).PipelineRuns());
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return "";
  const std::string id = (*store)->CreateRun("demo", "demo.yaml").value();
  const int64_t collect = (*store)->StartStage(id, "collect", "key-1").value();
  EXPECT_TRUE((*store)->FinishStage(collect, "finished", 1, {{"dataset", "d1"}}, "").ok());
  const int64_t train = (*store)->StartStage(id, "train", "key-2").value();
  EXPECT_TRUE((*store)->FinishStage(train, "failed", 2, {}, "out of memory").ok());
  EXPECT_TRUE((*store)->FinishRun(id, "failed", "stage train failed").ok());
  return id;
}

TEST(CliRunInspectTest, RunsAndStatusPrintJson) {
  const std::string root = testing::MakeTempDir("inspect") + "/store";
  const std::string id = StoreWithOneRun(root);

  const ProgramResult runs = RunRoboloop({"runs", "--root", root, "--format", "json"});
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  const nlohmann::json listed = nlohmann::json::parse(runs.out);
  ASSERT_EQ(listed["runs"].size(), 1u) << runs.out;
  EXPECT_EQ(listed["runs"][0]["id"], id);
  EXPECT_EQ(listed["runs"][0]["pipeline"], "demo");
  EXPECT_EQ(listed["runs"][0]["status"], "failed");
  EXPECT_GT(listed["runs"][0]["finished_unix_us"].get<int64_t>(), 0);

  const ProgramResult status = RunRoboloop({"status", id, "--root", root, "--format", "json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  const nlohmann::json run = nlohmann::json::parse(status.out);
  EXPECT_EQ(run["message"], "stage train failed");
  ASSERT_EQ(run["stages"].size(), 2u) << status.out;
  EXPECT_EQ(run["stages"][0]["stage"], "collect");
  EXPECT_EQ(run["stages"][0]["outputs"], nlohmann::json({{"dataset", "d1"}}));
  EXPECT_EQ(run["stages"][1]["status"], "failed");
  EXPECT_EQ(run["stages"][1]["attempts"], 2);
  EXPECT_EQ(run["stages"][1]["message"], "out of memory");

  EXPECT_EQ(RunRoboloop({"runs", "--root", root, "--format", "yaml"}).exit_code, 2);
}

// Two runs without stages of pipeline "demo" in the store under `root`, their ids changed to
// share the prefix "abcdef"; returns the ids.
std::vector<std::string> TwoRunsSharingAPrefix(const std::string& root) {
  std::vector<std::string> ids = {"abcdef11-0000-4000-8000-000000000001", "abcdef22-0000-4000-8000-000000000002"};
  {
    auto store = pipeline::RunStore::Open(StoreLayout(root).PipelineRuns());
    EXPECT_TRUE(store.ok()) << store.status();
    if (!store.ok()) return {};
    for (const std::string& id : ids) {
      const std::string created = (*store)->CreateRun("demo", "demo.yaml").value();
      EXPECT_TRUE((*store)->FinishRun(created, "failed", "stage train failed").ok());
      auto db = SqliteDb::Open(StoreLayout(root).PipelineRuns(), 5000);
      EXPECT_TRUE(db.ok()) << db.status();
      if (db.ok()) {
        EXPECT_TRUE((*db)->Exec("UPDATE runs SET id = '" + id + "' WHERE id = '" + created + "'").ok());
      }
    }
  }
  return ids;
}

// QA: status, logs and run --resume needed the whole run id; a unique prefix of at least 6
// characters (as for registry ids) names the run, one several runs share is a usage error listing them.
TEST(CliRunInspectTest, AUniquePrefixOfARunIdNamesTheRun) {
  const std::string root = testing::MakeTempDir("inspect-prefix") + "/store";
  const std::string id = StoreWithOneRun(root);
  const std::vector<std::string> shared = TwoRunsSharingAPrefix(root);
  ASSERT_EQ(shared.size(), 2u);
  const std::string prefix = id.substr(0, 6);

  const ProgramResult status = RunRoboloop({"status", prefix, "--root", root});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("run " + id + ": demo failed"));
  const ProgramResult logs = RunRoboloop({"logs", prefix, "--root", root});
  EXPECT_THAT(logs.err, HasSubstr("run " + id + " has no stage logs")) << "the prefix found the run";
  const ProgramResult resume = RunRoboloop({"run", "--resume", prefix, "--root", root});
  EXPECT_THAT(resume.err, HasSubstr("run " + id + " was recorded with the relative pipeline path demo.yaml"));

  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"status", "abcdef"}, {"logs", "abcdef"}, {"run", "--resume", "abcdef"}}) {
    std::vector<std::string> args = command;
    args.insert(args.end(), {"--root", root});
    const ProgramResult ambiguous = RunRoboloop(args);
    EXPECT_EQ(ambiguous.exit_code, 2) << command[0] << ambiguous.err;
    EXPECT_THAT(ambiguous.err, HasSubstr("run id prefix abcdef is ambiguous; candidates: ")) << command[0];
    EXPECT_THAT(ambiguous.err, HasSubstr(shared[0])) << command[0];
    EXPECT_THAT(ambiguous.err, HasSubstr(shared[1])) << command[0];
  }
  const ProgramResult short_prefix = RunRoboloop({"status", "abcde", "--root", root});
  EXPECT_EQ(short_prefix.exit_code, 1) << short_prefix.err;
  EXPECT_THAT(short_prefix.err, HasSubstr("no pipeline run abcde (a run id prefix needs at least 6 characters)"));
  const ProgramResult none = RunRoboloop({"status", "ffff0000", "--root", root});
  EXPECT_EQ(none.exit_code, 1) << none.err;
  EXPECT_THAT(none.err, HasSubstr("no pipeline run ffff0000"));
}

}  // namespace
}  // namespace roboloop
