#include "common/grpc_address.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace roboloop::common {
namespace {

constexpr char kUnixPrefix[] = "unix:";
constexpr char kAcceptedForms[] =
    "expected HOST:PORT, [IPV6]:PORT, unix:/absolute/path or unix:relative/path";

absl::Status BadAddress(const std::string& address, const std::string& why) {
  return absl::InvalidArgumentError(
      absl::StrCat("listen address '", address, "': ", why, " (", kAcceptedForms, ")"));
}

absl::StatusOr<ListenAddress> ParseUnix(const std::string& address) {
  ListenAddress parsed;
  parsed.kind = ListenAddress::Kind::kUnix;
  parsed.socket_path = address.substr(std::strlen(kUnixPrefix));
  // URI form unix:///abs/path carries an empty authority.
  if (absl::StartsWith(parsed.socket_path, "//")) {
    parsed.socket_path = parsed.socket_path.substr(2);
  }
  if (parsed.socket_path.empty()) return BadAddress(address, "empty socket path");
  if (parsed.socket_path.size() >= sizeof(sockaddr_un::sun_path)) {
    return BadAddress(address, absl::StrCat("socket path longer than ",
                                            sizeof(sockaddr_un::sun_path) - 1, " bytes"));
  }
  return parsed;
}

absl::StatusOr<ListenAddress> ParseTcp(const std::string& address) {
  ListenAddress parsed;
  std::string port_text;
  if (absl::StartsWith(address, "[")) {
    const size_t close = address.find(']');
    if (close == std::string::npos || close + 1 >= address.size() || address[close + 1] != ':') {
      return BadAddress(address, "IPv6 host must be written [addr]:PORT");
    }
    parsed.host = address.substr(1, close - 1);
    port_text = address.substr(close + 2);
  } else {
    const size_t colon = address.rfind(':');
    if (colon == std::string::npos) return BadAddress(address, "missing ':PORT'");
    parsed.host = address.substr(0, colon);
    if (parsed.host.find(':') != std::string::npos) {
      return BadAddress(address, "IPv6 host must be written [addr]:PORT");
    }
    port_text = address.substr(colon + 1);
  }
  if (!absl::SimpleAtoi(port_text, &parsed.port) || parsed.port < 0 || parsed.port > 65535) {
    return BadAddress(address, absl::StrCat("port '", port_text, "' is not a number in 0..65535"));
  }
  return parsed;
}

bool IsLoopbackHost(const std::string& host) {
  if (absl::AsciiStrToLower(host) == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    return IN6_IS_ADDR_LOOPBACK(&v6);
  }
  return false;
}

// True when a server accepts connections on the unix socket at `path`.
bool UnixSocketHasListener(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  const bool connected = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return connected;
}

}  // namespace

std::string ListenAddress::ToGrpcAddress() const {
  if (kind == Kind::kUnix) return absl::StrCat(kUnixPrefix, socket_path);
  if (host.find(':') != std::string::npos) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

bool ListenAddress::IsLoopback() const {
  return kind == Kind::kUnix || IsLoopbackHost(host);
}

absl::StatusOr<ListenAddress> ParseListenAddress(const std::string& address) {
  if (address.empty()) return BadAddress(address, "empty address");
  if (absl::StartsWith(address, kUnixPrefix)) return ParseUnix(address);
  return ParseTcp(address);
}

absl::Status PrepareUnixSocketPath(const std::string& socket_path) {
  const std::filesystem::path path(socket_path);
  if (path.has_parent_path()) {
    std::error_code error;
    std::filesystem::create_directories(path.parent_path(), error);
    if (error) {
      return absl::FailedPreconditionError(absl::StrCat("cannot create directory '",
                                                        path.parent_path().string(),
                                                        "' for unix socket: ", error.message()));
    }
  }
  struct stat info {};
  if (lstat(socket_path.c_str(), &info) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return ErrnoStatus(errno, absl::StrCat("unix socket path '", socket_path, "'"));
  }
  if (!S_ISSOCK(info.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "unix socket path '", socket_path, "' exists and is not a socket; refusing to replace it"));
  }
  if (UnixSocketHasListener(socket_path)) {
    return absl::FailedPreconditionError(
        absl::StrCat("unix socket '", socket_path, "' is in use by a running server"));
  }
  if (unlink(socket_path.c_str()) != 0) {
    return ErrnoStatus(errno, absl::StrCat("removing stale unix socket '", socket_path, "'"));
  }
  return absl::OkStatus();
}

}  // namespace roboloop::common
