#include "common/local_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace roboloop {
namespace {

struct AddrInfoDeleter {
  void operator()(addrinfo* list) const { freeaddrinfo(list); }
};

// The source address the kernel picks toward `target`; Unavailable with the errno text if none.
absl::StatusOr<std::string> SourceAddressFor(const addrinfo& target) {
  const int fd = ::socket(target.ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError(std::strerror(errno));
  sockaddr_storage local{};
  socklen_t length = sizeof(local);
  const bool routed = ::connect(fd, target.ai_addr, target.ai_addrlen) == 0 &&
                      ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0;
  const int error = errno;
  ::close(fd);
  if (!routed) return absl::UnavailableError(std::strerror(error));
  char text[INET6_ADDRSTRLEN] = {};
  const void* address = local.ss_family == AF_INET6
                            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr)
                            : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr);
  if (::inet_ntop(local.ss_family, address, text, sizeof(text)) == nullptr) {
    return absl::UnavailableError(std::strerror(errno));
  }
  return std::string(text);
}

}  // namespace

absl::StatusOr<std::string> LocalAddressToward(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const int resolved = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (resolved != 0) {
    return absl::InvalidArgumentError(absl::StrCat("host '", host, "' does not resolve: ", gai_strerror(resolved)));
  }
  const std::unique_ptr<addrinfo, AddrInfoDeleter> list(found);
  std::string last_error = "no address";
  for (const addrinfo* target = list.get(); target != nullptr; target = target->ai_next) {
    absl::StatusOr<std::string> source = SourceAddressFor(*target);
    if (source.ok()) return source;
    last_error = std::string(source.status().message());
  }
  return absl::UnavailableError(absl::StrCat("no route from this host to '", host, "': ", last_error));
}

}  // namespace roboloop
