#include "tests/util/subprocess.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

extern char** environ;

namespace roboloop::testing {
namespace {

std::string TempFilePath(const std::string& stem) {
  std::string path = ::testing::TempDir() + "/" + stem + "XXXXXX";
  int fd = mkstemp(path.data());
  if (fd >= 0) close(fd);
  return path;
}

}  // namespace

RunningProgram StartProgram(const std::vector<std::string>& argv,
                            const std::vector<std::string>& env, const std::string& cwd) {
  RunningProgram running;
  running.out_path = TempFilePath("stdout");
  running.err_path = TempFilePath("stderr");
  const std::string& out_path = running.out_path;
  const std::string& err_path = running.err_path;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_TRUNC, 0);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_TRUNC, 0);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());

  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  env_strings.insert(env_strings.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  if (posix_spawn(&running.pid, args[0], &actions, nullptr, args.data(), envp.data()) != 0) {
    running.pid = -1;
  }
  posix_spawn_file_actions_destroy(&actions);
  return running;
}

ProgramResult FinishProgram(const RunningProgram& running) {
  ProgramResult result;
  if (running.pid > 0) {
    int status = 0;
    waitpid(running.pid, &status, 0);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  result.out = ReadWholeFile(running.out_path);
  result.err = ReadWholeFile(running.err_path);
  unlink(running.out_path.c_str());
  unlink(running.err_path.c_str());
  return result;
}

ProgramResult RunProgram(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                         const std::string& cwd) {
  return FinishProgram(StartProgram(argv, env, cwd));
}

std::vector<std::string> DirectoryEntries(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

InterruptedProgram InterruptOncePartialAppears(const std::vector<std::string>& argv, const std::string& dir,
                                               int signal) {
  const auto has_partial = [&dir] {
    const std::vector<std::string> names = DirectoryEntries(dir);
    return std::any_of(names.begin(), names.end(),
                       [](const std::string& name) { return name.find(".partial-") != std::string::npos; });
  };
  InterruptedProgram stopped;
  const RunningProgram running = StartProgram(argv);
  for (int i = 0; i < 3000 && !stopped.partial_seen; ++i) {
    stopped.partial_seen = has_partial();
    if (!stopped.partial_seen) usleep(10'000);
  }
  kill(running.pid, signal);
  stopped.result = FinishProgram(running);
  return stopped;
}

std::string RoboloopBinary() { return std::string(ROBOLOOP_BINARY_DIR) + "/bin/roboloop"; }

ProgramResult RunRoboloop(const std::vector<std::string>& args, const std::vector<std::string>& env,
                          const std::string& cwd) {
  std::vector<std::string> argv = {RoboloopBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProgram(argv, env, cwd);
}

std::string MakeTempDir(const std::string& prefix) {
  std::string path = ::testing::TempDir() + "/" + prefix + "XXXXXX";
  if (mkdtemp(path.data()) == nullptr) return "";
  return path;
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace roboloop::testing
