// Fuzz target: evaluation protocol files (eval/protocol.h). A file is loaded, validated, hashed
// and checked for seed overlap with its own range (which overlaps by construction, so the
// error message describing both ranges is built for every valid protocol).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "eval/protocol.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = roboloop::fuzz::WriteScratchFile("protocol.yaml", data, size);
  const absl::StatusOr<roboloop::v1::Protocol> protocol = roboloop::eval::LoadProtocol(path);
  if (!protocol.ok()) return 0;
  const std::string hash = roboloop::eval::ProtocolHash(*protocol);
  if (hash.size() != 64) std::abort();
  const std::vector<std::string> known_tasks = {"cartpole-swingup", "pendulum-swingup", "reacher", "push",
                                                "yaml-point-reach"};
  if (!roboloop::eval::ValidateProtocol(*protocol, known_tasks).ok()) return 0;
  const roboloop::eval::SeedRange own = roboloop::eval::ProtocolSeeds(*protocol);
  if (roboloop::eval::CheckSeedsDisjoint(*protocol, {own}).ok()) std::abort();  // a range overlaps itself
  return 0;
}
