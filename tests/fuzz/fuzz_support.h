// Helpers shared by the fuzz targets of tests/fuzz (docs/RELIABILITY.md, "Fuzzing"): parsers that
// read files get the fuzzer's bytes through a scratch file of this process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"

namespace roboloop::fuzz {

// Aborts, printing "fuzz setup: <what>: <status>", when `status` is not OK: a target whose
// fixture cannot be built cannot run.
void RequireOk(const absl::Status& status, const std::string& what);

// Aborts, printing "contract broken: <what>", when `holds` is false: a finding.
void CheckContract(bool holds, const std::string& what);

// Parses `bytes` as a `Request` (a protobuf message) and passes it to `call`, as a service's gRPC
// adapter passes a decoded request to its handler; bytes that do not parse are no call.
template <typename Request, typename Call>
void Dispatch(const std::string& bytes, Call call) {
  Request request;
  if (request.ParseFromString(bytes)) call(std::move(request));
}

// A directory private to this process (created on first use under $TMPDIR, else /tmp, and
// removed at exit). Aborts when it cannot be created: a fuzz target without it cannot run.
const std::string& ScratchDir();

// Writes `size` bytes at `data` to ScratchDir()/`name` (replacing it) and returns the path.
// Not fsynced: the file lives as long as one input. Aborts when the write fails.
std::string WriteScratchFile(const std::string& name, const uint8_t* data, size_t size);

}  // namespace roboloop::fuzz
