// Listen-address parsing for the shared gRPC server: TCP `HOST:PORT` (IPv6 as `[addr]:PORT`)
// or unix sockets `unix:/abs/path` and `unix:relative/path`.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace roboloop::common {

// A parsed listen address.
struct ListenAddress {
  // Transport the address names.
  enum class Kind { kTcp, kUnix };
  Kind kind = Kind::kTcp;
  std::string host;         // TCP host as written, without IPv6 brackets; empty = all interfaces
  int port = 0;             // TCP port, 0 = let the kernel pick
  std::string socket_path;  // unix socket path as written (relative paths are cwd-relative)

  // Returns the address in the form grpc::ServerBuilder::AddListeningPort expects.
  std::string ToGrpcAddress() const;
  // True for addresses reachable only from this machine: 127.0.0.0/8, ::1, localhost, unix sockets.
  bool IsLoopback() const;
};

// Parses `address`; InvalidArgument naming the address and the accepted forms otherwise.
absl::StatusOr<ListenAddress> ParseListenAddress(const std::string& address);

// Makes a unix socket path ready to bind: creates its parent directories and removes a stale
// socket file left by a dead server. Refuses (FailedPrecondition) when the path holds a
// non-socket file or a socket a live server still accepts on.
absl::Status PrepareUnixSocketPath(const std::string& socket_path);

}  // namespace roboloop::common
