#include "sim/experts/lqr.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "sim/mujoco_guard.h"

namespace roboloop::sim {
namespace {

using Matrix = std::vector<double>;

// res (r × c) = a (r × k) · b (k × c).
Matrix Mul(const Matrix& a, const Matrix& b, int r, int k, int c) {
  Matrix res(static_cast<size_t>(r) * c, 0.0);
  for (int i = 0; i < r; ++i)
    for (int j = 0; j < k; ++j)
      for (int l = 0; l < c; ++l) res[i * c + l] += a[i * k + j] * b[j * c + l];
  return res;
}

Matrix Transpose(const Matrix& a, int r, int c) {
  Matrix t(a.size());
  for (int i = 0; i < r; ++i)
    for (int j = 0; j < c; ++j) t[j * r + i] = a[i * c + j];
  return t;
}

Matrix Identity(int n) {
  Matrix id(static_cast<size_t>(n) * n, 0.0);
  for (int i = 0; i < n; ++i) id[i * n + i] = 1.0;
  return id;
}

// Env-step dynamics from one physics step: A_s = A^s, B_s = (I + A + … + A^{s−1}) B.
void ComposeSubsteps(int substeps, int nx, int nu, Matrix* a, Matrix* b) {
  Matrix power = Identity(nx);
  Matrix sum(static_cast<size_t>(nx) * nx, 0.0);
  for (int s = 0; s < substeps; ++s) {
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += power[i];
    power = Mul(power, *a, nx, nx, nx);
  }
  *b = Mul(sum, *b, nx, nx, nu);
  *a = power;
}

// Solves S·X = Y for X (nu × nx) with S symmetric positive definite (nu × nu).
absl::StatusOr<Matrix> SolveSpd(Matrix s, const Matrix& y, int nu, int nx) {
  if (mju_cholFactor(s.data(), nu, 1e-12) != nu) {
    return absl::FailedPreconditionError("LQR: R + BᵀPB is not positive definite");
  }
  Matrix x(y.size());
  Matrix column(nu), solved(nu);
  for (int j = 0; j < nx; ++j) {
    for (int i = 0; i < nu; ++i) column[i] = y[i * nx + j];
    mju_cholSolve(solved.data(), s.data(), column.data(), nu);
    for (int i = 0; i < nu; ++i) x[i * nx + j] = solved[i];
  }
  return x;
}

}  // namespace

absl::StatusOr<std::vector<double>> ComputeLqrGain(const mjModel* m, const LqrProblem& problem) {
  const int nx = 2 * m->nv;
  const int nu = m->nu;
  if (m->na != 0) return absl::InvalidArgumentError("LQR: models with activations are not supported");
  if (static_cast<int>(problem.qpos.size()) != m->nq || static_cast<int>(problem.q_diag.size()) != nx ||
      static_cast<int>(problem.r_diag.size()) != nu) {
    return absl::InvalidArgumentError(absl::StrCat("LQR: expected ", m->nq, " qpos, ", nx,
                                                   " state weights and ", nu, " control weights"));
  }
  Matrix a(static_cast<size_t>(nx) * nx), b(static_cast<size_t>(nx) * nu);
  ModelPtr euler;
  ROBOLOOP_RETURN_IF_ERROR(GuardMujoco("LQR linearisation", [&] {
    // MuJoCo 3's mjd_transitionFD differentiates Euler and the implicit integrators, not RK4:
    // an RK4 model is linearised through a copy that steps with Euler, whose one-step Jacobians
    // agree with RK4's to first order in the timestep (the gains are what the experts use).
    if (m->opt.integrator == mjINT_RK4) {
      euler.reset(mj_copyModel(nullptr, m));
      euler->opt.integrator = mjINT_EULER;
    }
  }));
  const mjModel* linearised = euler ? euler.get() : m;
  ROBOLOOP_ASSIGN_OR_RETURN(DataPtr d, MakeData(linearised));
  ROBOLOOP_RETURN_IF_ERROR(GuardMujoco("LQR linearisation", [&] {
    for (int i = 0; i < m->nq; ++i) d->qpos[i] = problem.qpos[i];
    mj_forward(linearised, d.get());
    mjd_transitionFD(linearised, d.get(), 1e-6, 1, a.data(), b.data(), nullptr, nullptr);
  }));
  ComposeSubsteps(problem.substeps, nx, nu, &a, &b);
  Matrix q(static_cast<size_t>(nx) * nx, 0.0), r(static_cast<size_t>(nu) * nu, 0.0);
  for (int i = 0; i < nx; ++i) q[i * nx + i] = problem.q_diag[i];
  for (int i = 0; i < nu; ++i) r[i * nu + i] = problem.r_diag[i];
  const Matrix at = Transpose(a, nx, nx), bt = Transpose(b, nx, nu);
  Matrix p = q, k(static_cast<size_t>(nu) * nx, 0.0);
  for (int iteration = 0; iteration < 20000; ++iteration) {
    const Matrix pa = Mul(p, a, nx, nx, nx);
    const Matrix pb = Mul(p, b, nx, nx, nu);
    Matrix s = Mul(bt, pb, nu, nx, nu);
    for (size_t i = 0; i < s.size(); ++i) s[i] += r[i];
    ROBOLOOP_ASSIGN_OR_RETURN(k, SolveSpd(s, Mul(bt, pa, nu, nx, nx), nu, nx));
    // P' = Q + Aᵀ P A − Aᵀ P B K
    Matrix next = Mul(at, pa, nx, nx, nx);
    const Matrix correction = Mul(Mul(at, pb, nx, nx, nu), k, nx, nu, nx);
    double change = 0.0;
    for (size_t i = 0; i < next.size(); ++i) {
      next[i] += q[i] - correction[i];
      change = std::max(change, std::abs(next[i] - p[i]));
    }
    p = std::move(next);
    if (change < 1e-10 * (1.0 + std::abs(p[0]))) return k;
  }
  return absl::FailedPreconditionError("LQR: the Riccati iteration did not converge");
}

}  // namespace roboloop::sim
