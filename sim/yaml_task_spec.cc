#include "sim/yaml_task_spec.h"

#include <cmath>

namespace roboloop::sim {
namespace {

void PointPosition(const YamlPoint& p, const YamlTaskSpec& spec, const mjModel* m, const mjData* d,
                   double pos[3]) {
  if (p.kind == YamlPoint::Kind::kGoal) return GoalPosition(spec.goals[p.index], m, d, pos);
  const mjtNum* from = p.kind == YamlPoint::Kind::kSite ? &d->site_xpos[3 * p.index] : &d->xpos[3 * p.index];
  for (int k = 0; k < 3; ++k) pos[k] = from[k];
}

double Distance(const YamlPoint& a, const YamlPoint& b, const YamlTaskSpec& spec, const mjModel* m,
                const mjData* d) {
  double pa[3], pb[3];
  PointPosition(a, spec, m, d, pa);
  PointPosition(b, spec, m, d, pb);
  return std::sqrt((pa[0] - pb[0]) * (pa[0] - pb[0]) + (pa[1] - pb[1]) * (pa[1] - pb[1]) +
                   (pa[2] - pb[2]) * (pa[2] - pb[2]));
}

double SumOfSquares(const mjtNum* values, int n) {
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += values[i] * values[i];
  return sum;
}

}  // namespace

void PlaceGoal(const YamlGoal& goal, const mjModel* m, mjData* d, Rng& rng) {
  for (int k = 0; k < 3; ++k) {
    const double sample = rng.Uniform(goal.low[k], goal.high[k]);
    if (goal.mocap >= 0) {
      d->mocap_pos[3 * goal.mocap + k] = sample;
    } else if (goal.slide_qpos[k] >= 0) {
      const int adr = goal.slide_qpos[k];
      d->qpos[adr] = m->qpos0[adr] + goal.slide_sign[k] * (sample - goal.rest[k]);
    }
  }
}

void GoalPosition(const YamlGoal& goal, const mjModel* m, const mjData* d, double pos[3]) {
  for (int k = 0; k < 3; ++k) {
    if (goal.mocap >= 0) {
      pos[k] = d->mocap_pos[3 * goal.mocap + k];
    } else {
      const int adr = goal.slide_qpos[k];
      pos[k] = goal.rest[k] + (adr >= 0 ? goal.slide_sign[k] * (d->qpos[adr] - m->qpos0[adr]) : 0.0);
    }
  }
}

double Evaluate(const YamlQuantity& q, const YamlTaskSpec& spec, const mjModel* m, const mjData* d) {
  using Kind = YamlQuantity::Kind;
  switch (q.kind) {
    case Kind::kDistance:
      return Distance(q.from, q.to, spec, m, d);
    case Kind::kControlCost:
      return SumOfSquares(d->ctrl, m->nu);
    case Kind::kJointVelocityCost:
      return SumOfSquares(d->qvel, m->nv);
    case Kind::kAlive:
      return 1.0;
    case Kind::kUpright:
      return d->xmat[9 * q.body + 8];
    case Kind::kBodyPosition:
      return d->xpos[3 * q.body + q.component];
  }
  return 0.0;
}

bool Holds(const YamlCondition& c, const YamlTaskSpec& spec, const mjModel* m, const mjData* d) {
  const double value = Evaluate(c.quantity, spec, m, d);
  return c.below ? value < c.threshold : value > c.threshold;
}

void ObserveSource(const YamlObsSource& source, const YamlTaskSpec& spec, const mjModel* m, const mjData* d,
                   float* obs) {
  using Kind = YamlObsSource::Kind;
  double goal[3];
  const mjtNum* from = nullptr;
  switch (source.kind) {
    case Kind::kSitePos:
      from = &d->site_xpos[3 * source.index];
      break;
    case Kind::kBodyPos:
      from = &d->xpos[3 * source.index];
      break;
    case Kind::kBodyQuat:
      from = &d->xquat[4 * source.index];
      break;
    case Kind::kJointQpos:
      from = &d->qpos[source.index];
      break;
    case Kind::kJointQvel:
      from = &d->qvel[source.index];
      break;
    case Kind::kSensor:
      from = &d->sensordata[source.index];
      break;
    case Kind::kGoal:
      GoalPosition(spec.goals[source.index], m, d, goal);
      from = goal;
      break;
  }
  for (int i = 0; i < source.size; ++i) obs[i] = static_cast<float>(from[i]);
}

}  // namespace roboloop::sim
