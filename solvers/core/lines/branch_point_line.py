"""Lines of simple branch points (pitchforks, transcritical points) continued in (λ1, λ2).

Along such a line F_x has a simple zero eigenvalue *and* F_λ lies in its range (⟨w, F_λ⟩ = 0):
this happens on whole lines only where structure forces it — a symmetry (a symmetric state whose
critical mode is antisymmetric: ρ = 0 of an even potential) or a solution that exists for every λ.
The fold system [F; σ] is singular there, so the line is continued with a Moore-type extended
system (Moore, SIAM J. Numer. Anal. 17 (1980) 567) in z = (x, λ1, λ2, μ):

    F(x, λ) + μ ψ = 0,      σ(x, λ) = 0,      ⟨w(x, λ), F_λ(x, λ) e⟩ = 0,

with ψ the unit left null vector (so ⟨w, ψ⟩ ≠ 0), σ and w from the bordered system, and e the
parameter direction with the larger coupling ⟨w, F_xλ v⟩. The unfolding parameter μ is zero at
every solution on the line; the extra unknown makes the system regular there (its Jacobian has
full rank when the restricted fold system is regular and ⟨w, F_xλ e v⟩ ≠ 0). The largest |μ| met
is reported in the line's message.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from solvers.core.arclength import Box
from solvers.core.curve import Curve
from solvers.core.lines.bordered import fold_function, null_vectors
from solvers.core.lines.derivatives import Model, model_of
from solvers.core.lines.tracing import (
    LineCoordinates,
    Traced,
    Tracer,
    both_ends,
    describe,
    lam_scale,
    parameter_box,
    polish_seed,
    run_two_way,
)
from solvers.core.newton import fd_jacobian
from solvers.core.options import LineOptions
from solvers.core.problem import Problem
from solvers.core.special_points import BifurcationPoint, SpecialKind


class BranchPointSystem(LineCoordinates):
    """G = [F + μψ; σ; ⟨w, F_λ e⟩] in z = (x, λ1, λ2, μ)."""

    def __init__(self, model: Model, x0: np.ndarray, lam0: np.ndarray, x_scale: np.ndarray, lam_sc: np.ndarray):
        self.model = model
        self.n = n = model.dim
        v, w, _, _ = null_vectors(model.jac_x(x0, lam0))
        self.b, self.c, self.psi = w, v, w.copy()
        z0 = np.concatenate([x0, lam0])
        vz = np.concatenate([v, np.zeros(2)])
        coupling = [abs(float(w @ model.mixed(z0, vz, np.eye(n + 2)[n + k]))) for k in range(2)]
        self.e = np.eye(2)[int(np.argmax(coupling))]
        self.scale = np.concatenate([x_scale, lam_sc, [1.0]])
        self.lam_index = (n, n + 1)

    def _h(self, zxl: np.ndarray) -> float:
        x, lam = zxl[: self.n], zxl[self.n :]
        try:
            bd = fold_function(self.model.jac_x(x, lam), self.b, self.c)
        except np.linalg.LinAlgError:
            return float("nan")
        return float(bd.w @ self.model.d1(zxl, np.concatenate([np.zeros(self.n), self.e])))

    def residual(self, z: np.ndarray) -> np.ndarray:
        n = self.n
        x, lam, mu = z[:n], z[n : n + 2], float(z[n + 2])
        f = self.model.residual(x, lam) + mu * self.psi
        try:
            bd = fold_function(self.model.jac_x(x, lam), self.b, self.c)
        except np.linalg.LinAlgError:
            return np.full(n + 2, np.nan)
        h = float(bd.w @ self.model.d1(z[: n + 2], np.concatenate([np.zeros(n), self.e])))
        return np.concatenate([f, [bd.sigma, h]])

    def jacobian(self, z: np.ndarray) -> np.ndarray:
        n = self.n
        zxl = z[: n + 2]
        x, lam = zxl[:n], zxl[n:]
        A = self.model.jac_x(x, lam)
        J = np.zeros((n + 2, n + 3))
        J[:n, :n] = A
        J[:n, n : n + 2] = self.model.jac_lam(x, lam)
        J[:n, n + 2] = self.psi
        try:
            bd = fold_function(A, self.b, self.c)
        except np.linalg.LinAlgError:
            return np.full((n + 2, n + 3), np.nan)
        eye = np.eye(n + 2)
        J[n, : n + 2] = [-float(bd.w @ self.model.dJv(zxl, eye[k], bd.v)) for k in range(n + 2)]
        J[n + 1, : n + 2] = fd_jacobian(lambda y: np.array([self._h(y)]), zxl, scale=self.scale[: n + 2])[0]
        return J

    def accept(self, z: np.ndarray) -> None:
        n = self.n
        try:
            bd = fold_function(self.model.jac_x(z[:n], z[n : n + 2]), self.b, self.c)
        except np.linalg.LinAlgError:
            return
        self.c, self.b = bd.unit_v(), bd.unit_w()
        self.psi = self.b.copy()

    def reset(self, z: np.ndarray) -> None:
        """Borders and ψ from the singular vectors of F_x at z."""
        n = self.n
        v, w, _, _ = null_vectors(self.model.jac_x(z[:n], z[n : n + 2]))
        self.c, self.b, self.psi = v, w, w.copy()


def trace_branch_points(
    problem: Problem,
    x: np.ndarray,
    lam: Sequence[float],
    box: Box,
    options: LineOptions,
    branches: Sequence[str] = (),
    *,
    kind: SpecialKind = SpecialKind.BIFURCATION,
    bifurcation: BifurcationPoint | None = None,
) -> Traced:
    model = model_of(problem)
    x0, lam0 = np.asarray(x, dtype=float), np.asarray(lam, dtype=float)
    system = BranchPointSystem(model, x0, lam0, problem.x_scale(), lam_scale(box))
    tracer = Tracer(problem, system, kind, branches, "branch_point", bifurcation=bifurcation)
    z_seed = np.concatenate([x0, lam0, [0.0]])
    z0 = polish_seed(system, z_seed, options, fix=system.n)
    if z0 is None:
        return tracer.lost(z_seed, "the seed does not converge")
    both = run_two_way(system, z0, options, box, [])
    pair = both_ends(tracer.end(both.backward), tracer.end(both.forward))
    points = both.points()
    mu = max(abs(float(z[-1])) for z in points)
    return tracer.line(points, pair, f"{describe(pair, len(points))}; largest |μ| on the line {mu:.2e}")


def trace_branch_point_line(
    problem: Problem,
    x: np.ndarray,
    lam: Sequence[float],
    lam1_range: tuple[float, float],
    lam2_range: tuple[float, float],
    options: LineOptions | None = None,
    *,
    branches: Sequence[str] = (),
    kind: SpecialKind = SpecialKind.BIFURCATION,
) -> Curve:
    """The line of simple branch points through the branch point (x, λ)."""
    opts = options or LineOptions()
    return trace_branch_points(problem, x, lam, parameter_box(problem, lam1_range, lam2_range), opts, branches,
                               kind=kind).line
