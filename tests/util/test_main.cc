// The main of every test binary: runs the tests inside a private temp folder and removes it
// afterwards, so that a full suite leaves nothing behind under the system's temp folder.
//
// The folder is made under $TMPDIR (or /tmp) and exported as TMPDIR and TEST_TMPDIR before any
// test runs, so ::testing::TempDir(), std::filesystem::temp_directory_path(), mkstemp callers
// and every program a test starts all write inside it. It is removed when every test passed;
// after a failure it is kept and its path printed, for inspection.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

namespace {

// Creates the private temp folder under the inherited temp folder; empty if it cannot.
std::string MakePrivateTempFolder() {
  const char* inherited = getenv("TMPDIR");
  std::string pattern = std::string(inherited != nullptr && *inherited != '\0' ? inherited : "/tmp") +
                        "/roboloop-test-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) return "";
  return pattern;
}

// Removes `folder` where the run passed; otherwise says where its files were kept.
void CleanUp(const std::string& folder, bool passed) {
  if (!passed) {
    std::fprintf(stderr, "roboloop test: kept the temp folder %s for inspection\n", folder.c_str());
    return;
  }
  std::error_code error;
  std::filesystem::remove_all(folder, error);
  if (error) {
    std::fprintf(stderr, "roboloop test: cannot remove the temp folder %s: %s\n", folder.c_str(),
                 error.message().c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const std::string folder = MakePrivateTempFolder();
  if (folder.empty()) {
    std::perror("roboloop test: cannot create a private temp folder");
    return 1;
  }
  setenv("TMPDIR", folder.c_str(), 1);
  setenv("TEST_TMPDIR", folder.c_str(), 1);
  const int result = RUN_ALL_TESTS();
  CleanUp(folder, result == 0);
  return result;
}
