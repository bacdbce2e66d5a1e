// Why a local rank failed, recorded for its launcher (train/launcher.h): when one rank fails, its
// peers fail too (their collective or rendezvous breaks) and may exit first, so the launcher names
// the rank whose failure came first on its own, not the first to exit. Torch-free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"

namespace roboloop::train {

// The folder the launcher gives its ranks for their failure records.
inline constexpr char kRankFailureDirVariable[] = "ROBOLOOP_RANK_FAILURE_DIR";

// One rank's failure.
struct RankFailure {
  int64_t unix_micros = 0;         // when the rank met it (wall clock)
  bool maybe_consequence = false;  // a collective or the rendezvous failed: a peer's failure may be the cause
  std::string message;             // the rank's error
};

// When $ROBOLOOP_RANK_FAILURE_DIR names a folder, writes `status` (not OK), the time now and
// `maybe_consequence` as FOLDER/rank-<rank>.json; a rank's first record stays. Best effort: a
// record that cannot be written is left out (the launcher then goes by the order of exits).
void RecordRankFailure(int rank, const absl::Status& status, bool maybe_consequence);

// The record of `rank` under `dir`; nullopt when there is none or it cannot be read.
std::optional<RankFailure> ReadRankFailure(const std::string& dir, int rank);

}  // namespace roboloop::train
