// The main of a fuzz target in the ordinary (non-libFuzzer) build: feeds every file of the
// directories and files named on the command line to LLVMFuzzerTestOneInput, in name order, so
// the seed corpora of tests/fuzz/corpus run as ctest tests in every build. A crash (a fatal
// signal) or an exception escaping the target names the input and fails; so does an empty
// corpus. Exit status: 0 when every input ran, 1 otherwise (a signal re-raised after the name).
#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// The input being run, for the signal handler (which may only read it and call write()).
char g_current_input[4096] = "";

void WriteStderr(const char* text) {
  const ssize_t ignored = write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

void ReportCrash(int signal_number) {
  WriteStderr("corpus runner: crash (fatal signal) on input ");
  WriteStderr(g_current_input);
  WriteStderr("\n");
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

void InstallCrashReporter() {
  for (int signal_number : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) std::signal(signal_number, ReportCrash);
}

// The files named by `args`: regular files as given, directories' regular files sorted by name.
std::vector<std::filesystem::path> Inputs(const std::vector<std::string>& args) {
  std::vector<std::filesystem::path> inputs;
  for (const std::string& arg : args) {
    if (!std::filesystem::is_directory(arg)) {
      inputs.emplace_back(arg);
      continue;
    }
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(arg)) {
      if (entry.is_regular_file()) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    inputs.insert(inputs.end(), files.begin(), files.end());
  }
  return inputs;
}

// Runs one input; false (after naming it) when it could not be read or an exception escaped.
bool RunInput(const std::filesystem::path& input) {
  std::snprintf(g_current_input, sizeof(g_current_input), "%s", input.c_str());
  std::ifstream in(input, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "corpus runner: cannot read input %s\n", input.c_str());
    return false;
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "corpus runner: uncaught exception on input %s: %s\n", input.c_str(), e.what());
    return false;
  } catch (...) {
    std::fprintf(stderr, "corpus runner: uncaught non-standard exception on input %s\n", input.c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 1;
  }
  InstallCrashReporter();
  const std::vector<std::filesystem::path> inputs = Inputs(std::vector<std::string>(argv + 1, argv + argc));
  if (inputs.empty()) {
    std::fprintf(stderr, "corpus runner: no input files in the corpus\n");
    return 1;
  }
  int failures = 0;
  for (const auto& input : inputs) failures += RunInput(input) ? 0 : 1;
  std::printf("corpus runner: %zu inputs, %d failed\n", inputs.size(), failures);
  return failures == 0 ? 0 : 1;
}
