// The address of this host on the network that leads to another host: what a peer there can
// reach this host at. Multi-node collectives listen on it (a host name that resolves to some
// other interface, or to none, cannot be relied on).
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace roboloop {

// The local address (numeric, IPv4 or IPv6) that this host's routing table picks to send to
// `host`:`port`. Resolves `host`, asks the kernel for the route (a UDP connect: no packet is
// sent) and reads the chosen source address. Toward a loopback address it is that loopback.
// Errors: InvalidArgument naming `host` when it does not resolve; Unavailable naming it when no
// route leads there. Thread-safe.
absl::StatusOr<std::string> LocalAddressToward(const std::string& host, int port);

}  // namespace roboloop
