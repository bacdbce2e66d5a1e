// Evaluation protocols (issue 7, req 1): loading named protocols from configs/protocols/,
// the canonical protocol hash, validation, and seed-range disjointness checks.
// All functions are thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "roboloop/v1/eval.pb.h"

namespace roboloop::eval {

// Where named protocols live, relative to the working directory.
inline constexpr char kDefaultProtocolsDir[] = "configs/protocols";

// True when LoadProtocol reads `name_or_path` as a file path: it contains '/' or ends in ".yaml".
bool IsProtocolPath(const std::string& name_or_path);

// What a service accepts as a request's protocol_name: a name of its protocols directory.
// InvalidArgument naming `name` when it is a file path (IsProtocolPath), which would let a caller
// read any YAML file of the server's, or when it holds a NUL byte.
absl::Status CheckServedProtocolName(const std::string& name);

// Sets the protocol source of `request` (an EvaluateRequest or PromoteCandidateRequest) for a
// service: a protocol name as protocol_name; a file path (IsProtocolPath), which the service
// would refuse, is loaded here (errors as LoadProtocol's) and sent inline.
template <typename Request>
absl::Status SetRequestProtocol(const std::string& name_or_path, Request* request);

// Loads a protocol: `name_or_path` is a YAML file path when it contains '/' or ends in
// ".yaml", else the name of `<protocols_dir>/<name>.yaml`. An empty `name` in the file is set
// to the file's stem. Parse errors name file:line:column; an unknown name is NotFound listing
// the protocols in `protocols_dir`.
absl::StatusOr<v1::Protocol> LoadProtocol(const std::string& name_or_path,
                                          const std::string& protocols_dir = kDefaultProtocolsDir);

// The canonical serialization hashed by ProtocolHash (eval/README.md): the protocol without
// `name` and `description`, batch_invariant made explicit, as protobuf JSON (proto field
// names, default values omitted) re-serialized with sorted keys, no whitespace and empty
// objects dropped. Independent of YAML key order and formatting.
std::string CanonicalProtocolJson(const v1::Protocol& protocol);

// Lowercase hex sha256 of "roboloop.eval.protocol.v1\n" + CanonicalProtocolJson(protocol).
std::string ProtocolHash(const v1::Protocol& protocol);

// Checks everything that needs no simulator: `protocol.task` is one of `known_tasks`
// (InvalidArgument listing them otherwise; checked first), then CheckProtocolSettings. Errors name
// the protocol.
absl::Status ValidateProtocol(const v1::Protocol& protocol,
                              absl::Span<const std::string> known_tasks);

// Checks what needs no task list: the name holds no control character, the task is set,
// episodes >= 1, seed_start >= 0 (and the range fits int64), max_steps >= 1, the chunk execution
// mode is set with valid parameters.
// InvalidArgument naming the protocol and the field.
absl::Status CheckProtocolSettings(const v1::Protocol& protocol);

// Sets `protocol->task_definition_hash` to `actual_hash` when empty; FailedPrecondition
// naming both when the protocol pins a different one.
absl::Status PinTaskDefinition(const std::string& actual_hash, v1::Protocol* protocol);

// Batch-invariant inference requested (unset means true).
bool BatchInvariant(const v1::Protocol& protocol);

// Episodes [start, start + count) under one base seed: episode i starts from
// EpisodeSeed(base_seed, i). Ranges under different base seeds never overlap.
struct SeedRange {
  uint64_t base_seed = 0;  // base seed of the episode seeds
  int64_t start = 0;       // first episode index (>= 0)
  int64_t count = 0;       // episodes (>= 0)
  std::string label;       // what used the range, for errors, e.g. "dataset demos:v2"
};

// "base seed 0, episodes [1000000, 1000200)" (with the label first when set).
std::string DescribeSeedRange(const SeedRange& range);

// True when `a` and `b` share an episode (same base seed, intersecting index ranges).
bool Overlaps(const SeedRange& a, const SeedRange& b);

// The protocol's seed range, labelled "protocol '<name>'".
SeedRange ProtocolSeeds(const v1::Protocol& protocol);

// FailedPrecondition naming both ranges when the protocol's seeds overlap any of `used`
// (e.g. the seeds that collected training or feedback data).
absl::Status CheckSeedsDisjoint(const v1::Protocol& protocol, absl::Span<const SeedRange> used);

// Sets `request`'s protocol from a command-line argument: a protocol file (IsProtocolPath) is
// loaded and sent whole; anything else is sent as a protocol name for the service to resolve.
// The file's load error when it cannot be read or parsed.
template <typename Request>
absl::Status SetRequestProtocol(const std::string& name_or_path, Request* request) {
  if (!IsProtocolPath(name_or_path)) {
    request->set_protocol_name(name_or_path);
    return absl::OkStatus();
  }
  absl::StatusOr<v1::Protocol> protocol = LoadProtocol(name_or_path);
  if (!protocol.ok()) return protocol.status();
  *request->mutable_protocol() = *std::move(protocol);
  return absl::OkStatus();
}

}  // namespace roboloop::eval
