// `roboloop registry …`, `serve registry` and `quickstart` driven as a user would: the real
// binary, a real store, exit codes and messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/time.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/sha256.h"
#include "tests/util/subprocess.h"

namespace roboloop {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::ProgramResult;

class CliRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("cli");
    root_ = dir_ + "/store";
  }

  ProgramResult Roboloop(std::vector<std::string> args, bool with_root = true) {
    if (with_root) args.insert(args.end(), {"--root", root_});
    return testing::RunRoboloop(args);
  }

  std::string WriteFile(const std::string& name, const std::string& data) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << data;
    return path;
  }

  std::string Manifest() {
    return WriteFile("manifest.json", R"({"format_version": 1, "model": "x",
      "policy": {"kind": "mlp", "options": {}},
      "obs_spec": {"names": ["qpos"], "shapes": [[4]]},
      "action_spec": {"names": ["force"], "shapes": [[1]]},
      "normalization": {}, "action_chunk": {"horizon": 1, "execution": "receding"},
      "dataset_id": "", "parent_id": "", "step": 10, "metrics": {}, "blobs": {},
      "provenance": {}})");
  }

  std::string dir_;
  std::string root_;
};

TEST_F(CliRegistryTest, DatasetPutListGetShowVerify) {
  std::string file = WriteFile("demo.hdf5", "pretend dataset bytes");
  ProgramResult put = Roboloop({"registry", "put", file, "--dataset", "demos"});
  ASSERT_EQ(put.exit_code, 0) << put.err;
  EXPECT_THAT(put.out, HasSubstr("registered dataset demos:v1"));

  ProgramResult ls = Roboloop({"registry", "ls", "--datasets", "--format", "json"});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  nlohmann::json listed = nlohmann::json::parse(ls.out);
  ASSERT_EQ(listed["datasets"].size(), 1u);
  EXPECT_EQ(listed["datasets"][0]["name"], "demos");

  ProgramResult table = Roboloop({"registry", "ls", "--datasets"});
  EXPECT_THAT(table.out, HasSubstr("NAME"));
  EXPECT_THAT(table.out, HasSubstr("demos"));

  std::string back = dir_ + "/back.hdf5";
  ProgramResult get = Roboloop({"registry", "get", "demos:v1", "-o", back});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_EQ(testing::ReadWholeFile(back), "pretend dataset bytes");
  ProgramResult kept = Roboloop({"registry", "get", "demos@latest", "-o", back, "--range", "8:7"});
  EXPECT_EQ(kept.exit_code, 1);
  EXPECT_THAT(kept.err, HasSubstr(back + ": already exists (pass --overwrite)"));
  EXPECT_EQ(testing::ReadWholeFile(back), "pretend dataset bytes");
  ProgramResult range =
      Roboloop({"registry", "get", "demos@latest", "-o", back, "--range", "8:7", "--overwrite"});
  ASSERT_EQ(range.exit_code, 0) << range.err;
  EXPECT_EQ(testing::ReadWholeFile(back), "dataset");
  EXPECT_THAT(range.err, HasSubstr("download " + back + " 7/7 B (100%)")) << "the range's own size, in bytes";
  ProgramResult into_folder = Roboloop({"registry", "get", "demos:v1", "-o", dir_, "--overwrite"});
  EXPECT_EQ(into_folder.exit_code, 1);
  EXPECT_THAT(into_folder.err, HasSubstr(dir_ + ": is a folder; a dataset is fetched into a file"));

  ProgramResult show = Roboloop({"registry", "show", "demos:v1"});
  EXPECT_EQ(show.exit_code, 0) << show.err;
  EXPECT_THAT(show.out, HasSubstr("\"name\": \"demos\""));
  ProgramResult verify = Roboloop({"registry", "verify"});
  EXPECT_EQ(verify.exit_code, 0) << verify.err;
  EXPECT_THAT(verify.out, HasSubstr("0 problems"));
}

TEST_F(CliRegistryTest, CheckpointAliasPromoteHistoryLineage) {
  std::string policy = WriteFile("policy.bin", "weights-1");
  ProgramResult first = Roboloop({"registry", "put", "--model", "cartpole-mlp", "--manifest",
                                  Manifest(), "--blob", "policy=" + policy});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_THAT(first.out, HasSubstr("registered checkpoint cartpole-mlp:v1"));
  std::string policy2 = WriteFile("policy2.bin", "weights-2");
  ProgramResult second = Roboloop({"registry", "put", "--model", "cartpole-mlp", "--manifest",
                                   Manifest(), "--blob", "policy=" + policy2});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_THAT(second.out, HasSubstr("cartpole-mlp:v2"));

  ProgramResult refused = Roboloop({"registry", "alias", "cartpole-mlp", "champion", "cartpole-mlp:v1",
                                    "--reason", "sneaky"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.err, HasSubstr("champion"));
  ProgramResult promote =
      Roboloop({"registry", "promote", "cartpole-mlp", "cartpole-mlp:v1", "--reason", "best success"});
  ASSERT_EQ(promote.exit_code, 0) << promote.err;
  ProgramResult ordinary = Roboloop(
      {"registry", "promote", "cartpole-mlp", "cartpole-mlp:v1", "--reason", "r", "--alias", "newprot"});
  EXPECT_NE(ordinary.exit_code, 0);
  EXPECT_THAT(ordinary.err, HasSubstr("promote moves only a protected alias (champion), not 'newprot'"));
  ProgramResult alias =
      Roboloop({"registry", "alias", "cartpole-mlp", "staging", "cartpole-mlp:v2", "--reason", "try"});
  ASSERT_EQ(alias.exit_code, 0) << alias.err;

  ProgramResult history = Roboloop({"registry", "history", "cartpole-mlp", "--format", "json"});
  ASSERT_EQ(history.exit_code, 0) << history.err;
  nlohmann::json events = nlohmann::json::parse(history.out)["events"];
  std::vector<std::string> aliases;
  for (const auto& e : events) aliases.push_back(e["alias"]);
  EXPECT_THAT(aliases, ::testing::IsSupersetOf({"latest", "champion", "staging"}));

  std::string out = dir_ + "/ckpt";
  ProgramResult get = Roboloop({"registry", "get", "cartpole-mlp@champion", "-o", out});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_EQ(testing::ReadWholeFile(out + "/policy"), "weights-1");
  EXPECT_THAT(get.err, HasSubstr("download " + out + "/policy 9/9 B (100%)"));
  EXPECT_THAT(get.err, Not(HasSubstr(".partial-"))) << "progress names the folder asked for, not its temporary name";
  EXPECT_THAT(testing::ReadWholeFile(out + "/manifest.json"), HasSubstr("cartpole-mlp"));
  ProgramResult again = Roboloop({"registry", "get", "cartpole-mlp:v2", "-o", out});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_THAT(again.err, HasSubstr("already exists (pass --overwrite)"));
  ProgramResult replaced = Roboloop({"registry", "get", "cartpole-mlp:v2", "-o", out, "--overwrite"});
  ASSERT_EQ(replaced.exit_code, 0) << replaced.err;
  EXPECT_EQ(testing::ReadWholeFile(out + "/policy"), "weights-2");
  // A folder that is not an earlier checkpoint fetch keeps its files, --overwrite or not.
  std::filesystem::create_directory(dir_ + "/notes");
  WriteFile("notes/a.txt", "mine");
  ProgramResult mixed = Roboloop({"registry", "get", "cartpole-mlp:v2", "-o", dir_ + "/notes", "--overwrite"});
  EXPECT_EQ(mixed.exit_code, 1);
  EXPECT_THAT(mixed.err, HasSubstr("is not a checkpoint folder (no manifest.json)"));
  EXPECT_EQ(testing::ReadWholeFile(dir_ + "/notes/a.txt"), "mine");
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/notes/policy"));

  ProgramResult ls = Roboloop({"registry", "ls", "--model", "cartpole-mlp", "--alias", "champion"});
  EXPECT_THAT(ls.out, HasSubstr("champion"));
  ProgramResult lineage = Roboloop({"registry", "lineage", "cartpole-mlp:v2"});
  EXPECT_EQ(lineage.exit_code, 0) << lineage.err;
}

// QA: `registry ls --model nosuch` printed a table of headers only. As `leaderboard` does, a
// listing that finds nothing says so, naming the filters, and exits 0; JSON stays a listing.
TEST_F(CliRegistryTest, AnEmptyListingSaysNothingMatches) {
  const ProgramResult none = Roboloop({"registry", "ls"});
  EXPECT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.out, "no checkpoints registered\n");
  const ProgramResult model = Roboloop({"registry", "ls", "--model", "nosuch", "--alias", "champion"});
  EXPECT_EQ(model.exit_code, 0) << model.err;
  EXPECT_EQ(model.out, "no checkpoints match --model nosuch --alias champion\n");
  const ProgramResult datasets = Roboloop({"registry", "ls", "--datasets", "--since", "2100-01-01"});
  EXPECT_EQ(datasets.exit_code, 0) << datasets.err;
  EXPECT_EQ(datasets.out, "no datasets match --since 2100-01-01\n");
  const ProgramResult json = Roboloop({"registry", "ls", "--model", "nosuch", "--format", "json"});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  EXPECT_THAT(json.out, Not(HasSubstr("no checkpoints")));
}

TEST_F(CliRegistryTest, BadInputGetsClearErrorsAndExitCodes) {
  ProgramResult unknown = Roboloop({"registry", "show", "cartpol-mlp@champion"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("roboloop: "));
  EXPECT_THAT(unknown.err, HasSubstr("cartpol-mlp"));
  ProgramResult no_lineage = Roboloop({"registry", "lineage", "cartpol-mlp@champion"});
  EXPECT_EQ(no_lineage.exit_code, 1);
  EXPECT_THAT(no_lineage.err, HasSubstr("registry lineage to the registry at " + root_)) << "named by --root";
  EXPECT_THAT(no_lineage.err, Not(HasSubstr(".sock"))) << "the embedded registry's socket is private";
  ProgramResult usage = Roboloop({"registry", "get"});
  EXPECT_EQ(usage.exit_code, 2);
  ProgramResult both = Roboloop({"registry", "put", "x", "--dataset", "a", "--model", "b"});
  EXPECT_EQ(both.exit_code, 2);
  ProgramResult missing = Roboloop({"registry", "put", dir_ + "/nope.bin", "--dataset", "a"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("nope.bin"));
  // A bad name is a usage error found before the upload, so no unreferenced blob is left behind.
  for (const char* flag : {"--dataset", "--model"}) {
    std::vector<std::string> args = {"registry", "put", "--policy-file", WriteFile("f", "x"), "--task", "reacher"};
    if (std::string(flag) == "--dataset") args = {"registry", "put", WriteFile("f", "x")};
    args.insert(args.end(), {flag, "../etc"});
    ProgramResult bad_name = Roboloop(args);
    EXPECT_EQ(bad_name.exit_code, 2) << flag;
    EXPECT_THAT(bad_name.err, HasSubstr(std::string(flag) + ": invalid " + (flag[2] == 'd' ? "dataset" : "model") +
                                        " name \"../etc\"")) << bad_name.err;
  }
  std::error_code no_store;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root_ + "/blobs", no_store)) {
    EXPECT_FALSE(entry.is_regular_file()) << entry.path() << " was uploaded for a refused name";
  }
  ProgramResult bad_format = Roboloop({"registry", "ls", "--format", "xml"});
  EXPECT_EQ(bad_format.exit_code, 2);
  EXPECT_THAT(bad_format.err, HasSubstr("--format: xml not in {table,json}"));
  ProgramResult upper_case = Roboloop({"registry", "ls", "--format", "JSON"});
  EXPECT_EQ(upper_case.exit_code, 0) << upper_case.err;
  EXPECT_EQ(nlohmann::json::parse(upper_case.out), nlohmann::json::object());
  ProgramResult help = Roboloop({"registry", "put", "--help"}, /*with_root=*/false);
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("--dataset"));
}

TEST_F(CliRegistryTest, MissingVersionsAndNamesGetTheErrorOfTheKindThatKnowsTheName) {
  ASSERT_EQ(Roboloop({"registry", "put", WriteFile("e.bin", "bytes"), "--dataset", "ed"}).exit_code, 0);
  for (const char* command : {"get", "show"}) {
    std::vector<std::string> args = {"registry", command, "ed:v9"};
    if (std::string(command) == "get") args.insert(args.end(), {"-o", dir_ + "/x.bin"});
    ProgramResult missing_version = Roboloop(args);
    EXPECT_EQ(missing_version.exit_code, 1);
    EXPECT_THAT(missing_version.err, HasSubstr("dataset 'ed' has no version 9 (it has versions 1..1)")) << command;
    args[2] = "nosuch:v1";
    ProgramResult unknown = Roboloop(args);
    EXPECT_EQ(unknown.exit_code, 1);
    EXPECT_THAT(unknown.err, HasSubstr("unknown model or dataset 'nosuch'")) << command;
  }
  ProgramResult hex_name = Roboloop({"registry", "show", "ed"});
  EXPECT_THAT(hex_name.err, HasSubstr("did you mean ed@latest?"));
}

TEST_F(CliRegistryTest, ListFlagsThatDoNotApplyAreUsageErrors) {
  ProgramResult model_filter = Roboloop({"registry", "ls", "--datasets", "--model", "m1"});
  EXPECT_EQ(model_filter.exit_code, 2);
  EXPECT_THAT(model_filter.err, HasSubstr("--model, --dataset and --alias filter checkpoints"));
  EXPECT_EQ(Roboloop({"registry", "ls", "--datasets", "--alias", "champion"}).exit_code, 2);
  for (const char* limit : {"0", "-1", "100001"}) {
    ProgramResult bad_limit = Roboloop({"registry", "ls", "--limit", limit});
    EXPECT_EQ(bad_limit.exit_code, 2) << limit;
    EXPECT_THAT(bad_limit.err, HasSubstr("is not in 1..100000")) << limit;
  }
  for (const char* address : {"garbage", "host:99999"}) {
    ProgramResult bad_address = Roboloop({"registry", "ls", "--registry", address});
    EXPECT_EQ(bad_address.exit_code, 2) << address;
    EXPECT_THAT(bad_address.err, Not(HasSubstr("listen address"))) << address;
  }
  EXPECT_EQ(Roboloop({"registry", "put", WriteFile("f.bin", "x"), "--dataset", ""}).exit_code, 2);
  ProgramResult bad_metadata = Roboloop({"registry", "put", WriteFile("g.bin", "x"), "--dataset", "g", "--metadata", "{bad"});
  EXPECT_EQ(bad_metadata.exit_code, 2);
  EXPECT_THAT(bad_metadata.err, HasSubstr("--metadata '{bad': not a JSON object"));
}

TEST_F(CliRegistryTest, RegistryLsDoesNotMapLibTorch) {
  std::string report = dir_ + "/maps.txt";
  ProgramResult r = testing::RunProgram({testing::RoboloopBinary(), "registry", "ls", "--root", root_},
                                        {"ROBOLOOP_MAPS_REPORT=" + report});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::string maps = testing::ReadWholeFile(report);
  ASSERT_THAT(maps, HasSubstr("libgrpc"));
  EXPECT_THAT(maps, Not(HasSubstr("libtorch")));
}

TEST_F(CliRegistryTest, ServeRegistryRemoteModeAndGracefulStop) {
  std::string socket = dir_ + "/serve.sock";
  std::string token = WriteFile("token", "cli-token");
  std::string binary = testing::RoboloopBinary();
  std::vector<std::string> args = {binary,         "serve", "registry", "--listen", "unix:" + socket,
                                   "--token-file", token,   "--root",   root_};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid;
  ASSERT_EQ(posix_spawn(&pid, binary.c_str(), nullptr, nullptr, argv.data(), environ), 0);
  for (int i = 0; i < 100 && access(socket.c_str(), F_OK) != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::string file = WriteFile("remote.bin", "remote bytes");
  ProgramResult put = Roboloop({"registry", "put", file, "--dataset", "remote", "--registry",
                                "unix:" + socket, "--registry-token-file", token},
                               /*with_root=*/false);
  EXPECT_EQ(put.exit_code, 0) << put.err;
  ProgramResult denied = Roboloop({"registry", "ls", "--registry", "unix:" + socket}, false);
  EXPECT_EQ(denied.exit_code, 1);
  EXPECT_THAT(denied.err, HasSubstr("token"));
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  // What the server stored is there for the embedded registry on the same root.
  ProgramResult ls = Roboloop({"registry", "ls", "--datasets"});
  EXPECT_THAT(ls.out, HasSubstr("remote"));
}

TEST_F(CliRegistryTest, GcListsPartialUploadsAndDeletesOnlyThoseOlderThanTheMaxAge) {
  ASSERT_EQ(Roboloop({"registry", "ls"}).exit_code, 0);  // creates the store
  const std::string old_sha(64, 'a'), fresh_sha(64, 'b');
  const std::string old_partial = root_ + "/partial/" + old_sha, fresh_partial = root_ + "/partial/" + fresh_sha;
  std::ofstream(old_partial) << std::string(3 << 20, 'x');
  std::ofstream(fresh_partial) << "abc";
  const struct timeval two_days_ago[2] = {{time(nullptr) - 172800, 0}, {time(nullptr) - 172800, 0}};
  ASSERT_EQ(utimes(old_partial.c_str(), two_days_ago), 0);

  ProgramResult dry = Roboloop({"registry", "gc"});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_THAT(dry.out, HasSubstr("partial upload " + old_sha + "  3.0 MiB  idle 48h"));
  EXPECT_THAT(dry.out, HasSubstr("would be deleted"));
  EXPECT_THAT(dry.out, HasSubstr("partial upload " + fresh_sha + "  3 B  idle "));
  EXPECT_THAT(dry.out, HasSubstr("kept (fresh, resumable)"));
  EXPECT_THAT(dry.out, HasSubstr("1 partial uploads idle over 24h"));
  EXPECT_EQ(access(old_partial.c_str(), F_OK), 0) << "a dry run deletes nothing";

  ProgramResult applied = Roboloop({"registry", "gc", "--apply"});
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  EXPECT_THAT(applied.out, HasSubstr("deleted 0 unreferenced blobs and 1 partial uploads"));
  EXPECT_NE(access(old_partial.c_str(), F_OK), 0);
  EXPECT_EQ(testing::ReadWholeFile(fresh_partial), "abc");

  ProgramResult bad = Roboloop({"registry", "gc", "--partial-max-age", "soon"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("--partial-max-age 'soon'"));
  ProgramResult all = Roboloop({"registry", "gc", "--apply", "--partial-max-age", "0s"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_NE(access(fresh_partial.c_str(), F_OK), 0);
}

// Starts `serve registry --listen LISTEN --root ROOT EXTRA...`, waits for its banner, stops it with
// SIGTERM and returns what it printed.
ProgramResult ServeRegistryOnce(const std::string& listen, const std::string& root,
                                const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {testing::RoboloopBinary(), "serve", "registry", "--listen", listen, "--root", root};
  argv.insert(argv.end(), extra.begin(), extra.end());
  testing::RunningProgram running = testing::StartProgram(argv);
  for (int i = 0; i < 200 && testing::ReadWholeFile(running.out_path).find("serving") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(running.pid, SIGTERM);
  return testing::FinishProgram(running);
}

TEST_F(CliRegistryTest, ServeBannerNamesTheRealAddressAndWarnsWhenOtherMachinesCanCallWithoutAToken) {
  ProgramResult open = ServeRegistryOnce("0.0.0.0:0", root_, {"--insecure"});
  EXPECT_EQ(open.exit_code, 0) << open.err;
  EXPECT_THAT(open.out, HasSubstr("registry serving " + root_ + " on 0.0.0.0:"));
  EXPECT_THAT(open.out, HasSubstr("(clients on this machine dial 127.0.0.1:"));
  EXPECT_THAT(open.err, HasSubstr("WARNING: registry listens on 0.0.0.0:"));
  EXPECT_THAT(open.err, HasSubstr("without authentication"));
  EXPECT_THAT(open.err, HasSubstr("roboloop serve token -o FILE"));

  const std::string token = dir_ + "/made.token";
  ProgramResult made = Roboloop({"serve", "token", "-o", token}, /*with_root=*/false);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_THAT(made.out, HasSubstr(token));
  EXPECT_EQ(testing::ReadWholeFile(token).size(), 65u);
  ProgramResult again = Roboloop({"serve", "token", "-o", token}, /*with_root=*/false);
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_THAT(again.err, HasSubstr(token));

  ProgramResult guarded = ServeRegistryOnce("0.0.0.0:0", root_, {"--insecure", "--token-file", token});
  EXPECT_EQ(guarded.exit_code, 0) << guarded.err;
  EXPECT_THAT(guarded.err, Not(HasSubstr("without authentication")));
  EXPECT_THAT(guarded.err, HasSubstr("in plaintext: calls and the bearer token travel in clear"));

  ProgramResult local = ServeRegistryOnce("127.0.0.1:0", root_, {});
  EXPECT_EQ(local.exit_code, 0) << local.err;
  EXPECT_THAT(local.out, HasSubstr("registry serving " + root_ + " on 127.0.0.1:"));
  EXPECT_THAT(local.out, Not(HasSubstr("dial")));
  EXPECT_THAT(local.err, Not(HasSubstr("WARNING")));
}

// The tokens-file entry `serve token --name N --role R` prints for its new token.
std::string PrintedEntry(const ProgramResult& made) {
  const size_t at = made.out.find("  - {name: ");
  return at == std::string::npos ? "" : made.out.substr(at);
}

TEST_F(CliRegistryTest, TokensFileCallersGetTheirRolesAndSighupAdmitsNewOnes) {
  const std::string reader = dir_ + "/reader.token", admin = dir_ + "/admin.token";
  ProgramResult made_reader = Roboloop({"serve", "token", "-o", reader, "--name", "rita", "--role", "read"}, false);
  ASSERT_EQ(made_reader.exit_code, 0) << made_reader.err;
  EXPECT_THAT(PrintedEntry(made_reader),
              HasSubstr("sha256: " + Sha256Hex(testing::ReadWholeFile(reader).substr(0, 64)) + ", role: read}"));
  ProgramResult bad_role = Roboloop({"serve", "token", "-o", dir_ + "/x.token", "--name", "x", "--role", "root"}, false);
  EXPECT_EQ(bad_role.exit_code, 2) << "a bad --role is a usage error";
  EXPECT_THAT(bad_role.err, HasSubstr("--role: unknown role 'root'"));
  ProgramResult no_role = Roboloop({"serve", "token", "-o", dir_ + "/x.token", "--name", "x"}, false);
  EXPECT_EQ(no_role.exit_code, 2) << "--name without --role is a usage error";
  EXPECT_THAT(no_role.err, HasSubstr("give --name and --role together"));
  EXPECT_NE(access((dir_ + "/x.token").c_str(), F_OK), 0) << "a refused command writes no token";

  const std::string tokens = WriteFile("tokens.yaml", "tokens:\n" + PrintedEntry(made_reader));
  const std::string socket = dir_ + "/roles.sock";
  testing::RunningProgram server = testing::StartProgram(
      {testing::RoboloopBinary(), "serve", "registry", "--listen", "unix:" + socket, "--root", root_,
       "--tokens-file", tokens});
  for (int i = 0; i < 200 && access(socket.c_str(), F_OK) != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const std::vector<std::string> remote = {"--registry", "unix:" + socket, "--registry-token-file"};
  auto as = [&](const std::string& token, std::vector<std::string> args) {
    args.insert(args.end(), remote.begin(), remote.end());
    args.push_back(token);
    return Roboloop(args, /*with_root=*/false);
  };
  EXPECT_EQ(as(reader, {"registry", "ls"}).exit_code, 0);
  ProgramResult put = as(reader, {"registry", "put", WriteFile("d.bin", "bytes"), "--dataset", "d"});
  EXPECT_EQ(put.exit_code, 1);
  EXPECT_THAT(put.err, HasSubstr("needs role 'write'; caller 'rita' has role 'read'"));

  ProgramResult made_admin = Roboloop({"serve", "token", "-o", admin, "--name", "ada", "--role", "admin"}, false);
  ASSERT_EQ(made_admin.exit_code, 0) << made_admin.err;
  EXPECT_EQ(as(admin, {"registry", "ls"}).exit_code, 1);  // not in the file yet
  WriteFile("tokens.yaml", "tokens:\n" + PrintedEntry(made_reader) + PrintedEntry(made_admin));
  kill(server.pid, SIGHUP);
  int admin_ls = 1;
  for (int i = 0; i < 100 && admin_ls != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    admin_ls = as(admin, {"registry", "ls"}).exit_code;
  }
  EXPECT_EQ(admin_ls, 0);
  EXPECT_EQ(as(admin, {"registry", "put", WriteFile("e.bin", "more"), "--dataset", "e"}).exit_code, 0);
  kill(server.pid, SIGTERM);
  ProgramResult served = testing::FinishProgram(server);
  EXPECT_EQ(served.exit_code, 0) << served.err;
  EXPECT_THAT(served.err, HasSubstr("tokens file re-read"));
}

}  // namespace
}  // namespace roboloop
