// Test helper: two "hosts" on one link. Each host is a network namespace of its own (its own
// interfaces, addresses, routes and loopback); a veth pair joins them as 10.213.0.1/24 and
// 10.213.0.2/24. Programs started through On() see only their host's network, so traffic
// between them crosses the link as between two machines, while the file system stays shared.
// Needs root and iproute2's `ip`; where either is missing, ok() is false and why() says why.
#pragma once

#include <string>
#include <vector>

namespace roboloop::testing {

class TwoHostLink {
 public:
  // Creates both namespaces, the link, the addresses, and brings every interface up.
  TwoHostLink();
  // Deletes both namespaces, which removes the link with them.
  ~TwoHostLink();
  TwoHostLink(const TwoHostLink&) = delete;
  TwoHostLink& operator=(const TwoHostLink&) = delete;

  // True when both hosts and the link were made.
  bool ok() const { return why_.empty(); }
  // Why the hosts could not be made (empty when ok()).
  const std::string& why() const { return why_; }
  // Host `host`'s (0 or 1) address on the link.
  static std::string Address(int host);
  // `argv` run on host `host`: `ip netns exec <its namespace> argv...`; the environment and the
  // working folder pass through unchanged.
  std::vector<std::string> On(int host, const std::vector<std::string>& argv) const;

 private:
  // Runs `ip args...`; records what failed in why_ and returns false on failure.
  bool Ip(const std::vector<std::string>& args);

  std::string names_[2];
  std::string why_;
};

}  // namespace roboloop::testing
