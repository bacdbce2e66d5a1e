#include "tests/util/two_host_link.h"

#include <unistd.h>

#include <atomic>

#include "tests/util/subprocess.h"

namespace roboloop::testing {
namespace {

constexpr char kIp[] = "/usr/sbin/ip";

// A name no other instance of the helper (this process or another) is using.
std::string UniqueName(const std::string& suffix) {
  static std::atomic<int> next{0};
  return "rl" + std::to_string(::getpid()) + "n" + std::to_string(next++) + suffix;
}

}  // namespace

TwoHostLink::TwoHostLink() {
  if (::geteuid() != 0) {
    why_ = "network namespaces need root";
    return;
  }
  if (::access(kIp, X_OK) != 0) {
    why_ = std::string("no ") + kIp + " (Debian package iproute2)";
    return;
  }
  const std::string link = UniqueName("");
  const std::string ends[2] = {link + "a", link + "b"};
  if (!Ip({"netns", "add", link + "h0"})) return;
  names_[0] = link + "h0";
  if (!Ip({"netns", "add", link + "h1"})) return;
  names_[1] = link + "h1";
  if (!Ip({"link", "add", ends[0], "type", "veth", "peer", "name", ends[1]})) return;
  for (int host = 0; host < 2; ++host) {
    if (!Ip({"link", "set", ends[host], "netns", names_[host]}) ||
        !Ip({"-n", names_[host], "addr", "add", Address(host) + "/24", "dev", ends[host]}) ||
        !Ip({"-n", names_[host], "link", "set", ends[host], "up"}) ||
        !Ip({"-n", names_[host], "link", "set", "lo", "up"})) {
      return;
    }
  }
}

TwoHostLink::~TwoHostLink() {
  for (const std::string& name : names_) {
    if (!name.empty()) RunProgram({kIp, "netns", "delete", name});
  }
}

std::string TwoHostLink::Address(int host) { return "10.213.0." + std::to_string(host + 1); }

std::vector<std::string> TwoHostLink::On(int host, const std::vector<std::string>& argv) const {
  std::vector<std::string> wrapped = {kIp, "netns", "exec", names_[host]};
  wrapped.insert(wrapped.end(), argv.begin(), argv.end());
  return wrapped;
}

bool TwoHostLink::Ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {kIp};
  argv.insert(argv.end(), args.begin(), args.end());
  const ProgramResult result = RunProgram(argv);
  if (result.exit_code == 0) return true;
  why_ = "ip";
  for (const std::string& arg : args) why_ += " " + arg;
  why_ += " failed: " + result.err;
  return false;
}

}  // namespace roboloop::testing
