// The physics state of an episode: time, qpos, qvel, act, qacc_warmstart, ctrl, mocap_pos,
// mocap_quat, userdata, in that order, read field by field (hashing needs no buffer). This is
// MuJoCo 3's mj_getState(mjSTATE_INTEGRATION) less the inputs no task sets (applied forces,
// eq_active, plugin state); the layout is the one datasets already store. Used for hashing,
// replay, datasets and relabelling.
#pragma once

#include <cstdint>

#include <mujoco/mujoco.h>

namespace roboloop::sim {

// Number of doubles in the full state of `model`.
int PhysicsStateSize(const mjModel* model);

// Writes the full state of `data` into `out` (PhysicsStateSize(model) doubles).
void CapturePhysicsState(const mjModel* model, const mjData* data, double* out);

// Writes a state captured by CapturePhysicsState into `data`, then runs mj_forward so that
// derived quantities (positions of sites, sensors) match it.
void RestorePhysicsState(const mjModel* model, const double* state, mjData* data);

// 64-bit hash of the full state's bytes (bitwise: -0.0 and 0.0 differ). No allocation.
uint64_t HashPhysicsState(const mjModel* model, const mjData* data);

// The next link of a hash chain: combines the chain so far with one state's hash.
uint64_t ChainHash(uint64_t chain, uint64_t state_hash);

}  // namespace roboloop::sim
