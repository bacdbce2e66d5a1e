#include "sim/physics_state.h"

#include <cstring>

#include "sim/rng.h"

namespace roboloop::sim {
namespace {

// Calls `visit(pointer, count)` for each state field, in the documented order.
template <typename Data, typename Visit>
void ForEachStateField(const mjModel* m, Data* d, Visit&& visit) {
  visit(&d->time, 1);
  visit(d->qpos, m->nq);
  visit(d->qvel, m->nv);
  visit(d->act, m->na);
  visit(d->qacc_warmstart, m->nv);
  visit(d->ctrl, m->nu);
  visit(d->mocap_pos, 3 * m->nmocap);
  visit(d->mocap_quat, 4 * m->nmocap);
  visit(d->userdata, m->nuserdata);
}

// One step of a word-wise multiply-rotate hash over 64-bit words.
uint64_t HashWord(uint64_t h, uint64_t word) {
  h ^= word * 0x9fb21c651e98df25ULL;
  h = (h << 27) | (h >> 37);
  return h * 0xc2b2ae3d27d4eb4fULL + 0x165667b19e3779f9ULL;
}

}  // namespace

int PhysicsStateSize(const mjModel* m) {
  return 1 + m->nq + 2 * m->nv + m->na + m->nu + 7 * m->nmocap + m->nuserdata;
}

void CapturePhysicsState(const mjModel* m, const mjData* d, double* out) {
  ForEachStateField(m, d, [&out](const mjtNum* field, int count) {
    std::memcpy(out, field, sizeof(double) * count);
    out += count;
  });
}

void RestorePhysicsState(const mjModel* m, const double* state, mjData* d) {
  ForEachStateField(m, d, [&state](mjtNum* field, int count) {
    std::memcpy(field, state, sizeof(double) * count);
    state += count;
  });
  mj_forward(m, d);
}

uint64_t HashPhysicsState(const mjModel* m, const mjData* d) {
  uint64_t h = 0x243f6a8885a308d3ULL;
  ForEachStateField(m, d, [&h](const mjtNum* field, int count) {
    for (int i = 0; i < count; ++i) {
      uint64_t word;
      std::memcpy(&word, &field[i], sizeof(word));
      h = HashWord(h, word);
    }
    h = HashWord(h, static_cast<uint64_t>(count));
  });
  return Mix64(h);
}

uint64_t ChainHash(uint64_t chain, uint64_t state_hash) { return Mix64(HashWord(chain, state_hash)); }

}  // namespace roboloop::sim
