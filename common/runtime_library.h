// Finding and opening the libraries that roboloop loads at run time with dlopen (LibTorch's
// libroboloop_torch.so, libroboloop_lerobot.so, libroboloop_gloo.so), so that binaries that do
// not need them never map them. Torch-free, absl only.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace roboloop {

// The folder of the running executable ("." when /proc/self/exe cannot be read).
std::string ExecutableFolder();

// Where library `file_name` is looked for, in order: the value of environment variable
// `override_variable` alone when it is set and not empty; else `folder`/`file_name`, then
// `folder`/../lib/`file_name` (the build's layout: binaries in bin/, libraries in lib/).
std::vector<std::string> LibraryCandidates(const std::string& folder, const std::string& file_name,
                                           const char* override_variable = nullptr);

// An entry point found in a loaded library.
struct LibraryEntry {
  std::string path;        // the candidate that was opened
  void* symbol = nullptr;  // the address of the entry point, never null
};

// Opens the first of `candidates` that exists, that dlopen opens with `dlopen_flags` and that
// exports `symbol`; the handle stays open for the life of the process. Error
// (FailedPrecondition): no candidate served, each named with why (absent, dlopen's message, no
// such symbol).
absl::StatusOr<LibraryEntry> OpenLibraryEntry(const std::vector<std::string>& candidates, const char* symbol,
                                              int dlopen_flags);

}  // namespace roboloop
