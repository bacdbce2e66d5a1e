#include "tests/fuzz/fuzz_support.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace roboloop::fuzz {
namespace {

void RemoveScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(ScratchDir(), ignored);
}

std::string MakeScratchDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/roboloop-fuzz-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    std::perror("roboloop fuzz: cannot create a scratch directory");
    std::abort();
  }
  return pattern;
}

}  // namespace

void RequireOk(const absl::Status& status, const std::string& what) {
  if (status.ok()) return;
  std::fprintf(stderr, "fuzz setup: %s: %s\n", what.c_str(), status.ToString().c_str());
  std::abort();
}

void CheckContract(bool holds, const std::string& what) {
  if (holds) return;
  std::fprintf(stderr, "contract broken: %s\n", what.c_str());
  std::abort();
}

const std::string& ScratchDir() {
  static const std::string* const kDir = [] {
    auto* dir = new std::string(MakeScratchDir());
    std::atexit(RemoveScratchDir);
    return dir;
  }();
  return *kDir;
}

std::string WriteScratchFile(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = ScratchDir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) {
    std::fprintf(stderr, "roboloop fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
  return path;
}

}  // namespace roboloop::fuzz
