"""Fold (spinodal) lines: a fold of F(x, λ) = 0 continued in (λ1, λ2).

Minimally augmented system (Govaerts 2000; BifurcationKit's ``FoldProblemMinimallyAugmented``):
the unknowns are z = (x, λ1, λ2) and the equations

    F(x, λ) = 0,      σ(x, λ) = 0,

with σ from the bordered system [[F_x, b], [cᵀ, 0]] [v; σ] = [0; 1] (``bordered``); b and c are
reset to the unit left and right null vectors at every accepted point. Its Jacobian row for σ is
−wᵀ ∂_z(F_x) v. The system is regular along a fold line, through a cusp included, so the
continuation passes the cusp; the line is stopped there.

Cusp: the fold's second-order coefficient a = ⟨ŵ, F_xx[v̂, v̂]⟩ (unit null vectors, orientations
carried continuously by the borders) changes sign where two folds meet; that zero is located along
the arclength and reported as a ``critical`` end. ``solve_cusp`` solves F = σ = a = 0 directly
(n + 2 equations in n + 2 unknowns, regular at a non-degenerate cusp).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from solvers.core.arclength import Box, Monitor
from solvers.core.corrector import correct, scaled_jacobian
from solvers.core.curve import Curve, End
from solvers.core.lines.bordered import fold_function, null_vectors
from solvers.core.lines.branch_switching import NEAR_RANGE, jacobian_size, singular_defects
from solvers.core.lines.derivatives import Model, model_of
from solvers.core.lines.tracing import (
    LineCoordinates,
    Traced,
    Tracer,
    lam_scale,
    line_limits,
    parameter_box,
    polish_seed,
    run_two_way,
)
from solvers.core.newton import ROUND_OFF, newton
from solvers.core.options import LineOptions
from solvers.core.problem import Problem
from solvers.core.special_points import SpecialKind


class FoldSystem(LineCoordinates):
    """G(x, λ) = [F(x, λ); σ(x, λ)] in z = (x, λ1, λ2)."""

    def __init__(self, model: Model, x0: np.ndarray, lam0: np.ndarray, x_scale: np.ndarray, lam_sc: np.ndarray):
        self.model = model
        self.n = model.dim
        v, w, _, _ = null_vectors(model.jac_x(x0, lam0))
        self.b, self.c = w, v
        self.scale = np.concatenate([x_scale, lam_sc])
        self.lam_index = (self.n, self.n + 1)

    def _split(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return z[: self.n], z[self.n :]

    def residual(self, z: np.ndarray) -> np.ndarray:
        x, lam = self._split(z)
        f = self.model.residual(x, lam)
        try:
            bd = fold_function(self.model.jac_x(x, lam), self.b, self.c)
        except np.linalg.LinAlgError:
            return np.full(self.n + 1, np.nan)
        return np.concatenate([f, [bd.sigma]])

    def jacobian(self, z: np.ndarray) -> np.ndarray:
        x, lam = self._split(z)
        A = self.model.jac_x(x, lam)
        L = self.model.jac_lam(x, lam)
        try:
            bd = fold_function(A, self.b, self.c)
        except np.linalg.LinAlgError:
            return np.full((self.n + 1, self.n + 2), np.nan)
        eye = np.eye(self.n + 2)
        grad = np.array([-float(bd.w @ self.model.dJv(z, eye[k], bd.v)) for k in range(self.n + 2)])
        return np.vstack([np.hstack([A, L]), grad])

    def accept(self, z: np.ndarray) -> None:
        x, lam = self._split(z)
        try:
            bd = fold_function(self.model.jac_x(x, lam), self.b, self.c)
        except np.linalg.LinAlgError:
            return
        self.c, self.b = bd.unit_v(), bd.unit_w()

    def reset(self, z: np.ndarray) -> None:
        """Borders from the singular vectors of F_x at z (before solving far from the last accepted point)."""
        v, w, _, _ = null_vectors(self.model.jac_x(z[: self.n], z[self.n :]))
        self.c, self.b = v, w

    def coefficient(self, z: np.ndarray) -> float:
        """a = ⟨ŵ, F_xx[v̂, v̂]⟩ with the current orientation of the null vectors."""
        x, lam = self._split(z)
        try:
            bd = fold_function(self.model.jac_x(x, lam), self.b, self.c)
        except np.linalg.LinAlgError:
            return float("nan")
        v = bd.unit_v()
        return float(bd.unit_w() @ self.model.second(z, np.concatenate([v, np.zeros(2)])))


def solve_cusp(
    model: Model, x: np.ndarray, lam: np.ndarray, scale: np.ndarray, options: LineOptions, ref: float
) -> np.ndarray | None:
    """z = (x, λ) with F = 0, σ = 0 and a = 0 (a non-degenerate cusp), by Newton from a guess.

    None when Newton does not converge or converges next to a branch point, where the cusp
    system is degenerate; ``ref`` is the size of the scaled Jacobian [F_x F_λ] along the line
    that leads there (at a branch point of a one-component state the whole Jacobian vanishes).
    """
    n = model.dim
    try:
        v, w, _, _ = null_vectors(model.jac_x(x, lam))
    except np.linalg.LinAlgError:
        return None
    border = {"b": w, "c": v}

    def H(u: np.ndarray) -> np.ndarray:
        z = u * scale
        xx, ll = z[:n], z[n:]
        try:
            bd = fold_function(model.jac_x(xx, ll), border["b"], border["c"])
        except np.linalg.LinAlgError:
            return np.full(n + 2, np.nan)
        a = float(bd.unit_w() @ model.second(z, np.concatenate([bd.unit_v(), np.zeros(2)])))
        return np.concatenate([model.residual(xx, ll), [bd.sigma, a]])

    res = newton(H, np.concatenate([x, lam]) / scale, tol=options.tolerance, noise_floor=ROUND_OFF)
    if not res.converged:
        return None
    z = res.x * scale
    # On a line of branch points (ρ = 0 of an even potential) F = σ = a = 0 holds all along the
    # line: the cusp system is singular there and its "solution" is not a cusp.
    if singular_defects(model, z[:n], z[n:], scale[:n], scale[n:], ref)[1] < NEAR_RANGE:
        return None
    return z


def meets_branch_points(
    model: Model, z: np.ndarray, system: FoldSystem, problem: Problem, ref: float
) -> bool:
    """F_λ nearly in the range of F_x at the fold z (⟨ŵ, F_λ⟩ small against the Jacobian's size ``ref``)."""
    n = system.n
    return singular_defects(model, z[:n], z[n:], problem.x_scale(), system.scale[n:], ref)[1] < NEAR_RANGE


def trace_fold(
    problem: Problem,
    x: np.ndarray,
    lam: Sequence[float],
    box: Box,
    options: LineOptions,
    branches: Sequence[str] = (),
) -> Traced:
    model = model_of(problem)
    lam0 = np.asarray(lam, dtype=float)
    x0 = np.asarray(x, dtype=float)
    system = FoldSystem(model, x0, lam0, problem.x_scale(), lam_scale(box))
    tracer = Tracer(problem, system, SpecialKind.FOLD, branches, "fold")
    z0 = polish_seed(system, np.concatenate([x0, lam0]), options, fix=system.n)
    if z0 is None:
        return tracer.lost(np.concatenate([x0, lam0]), "the seed does not converge to a fold")
    system.accept(z0)
    cusp = Monitor("cusp", lambda z, t: system.coefficient(z), stop=True)
    both = run_two_way(system, z0, options, box, [cusp])
    beyond: list[np.ndarray] = []
    ends = []
    for path in (both.backward, both.forward):
        z_end = path.z[-1]
        if path.end == "cusp":
            ref = jacobian_size(model, path.z[:: max(1, len(path.z) // 8)], system.scale)
            refined = solve_cusp(model, z_end[: system.n], z_end[system.n :], system.scale, options, ref)
            precision, detail = path.end_precision, "cusp: two fold lines meet"
            if refined is not None and np.max(np.abs((refined - z_end) / system.scale)) < options.ds_max:
                z_end = refined
                path.z[-1] = refined
                precision = 0.0
            else:
                # The regular cusp system fails: a degenerate cusp, located only along the line.
                # Its precision is bounded by the last step.
                zs = path.z
                precision = max(precision, float(np.max(np.abs(zs[-1][system.n :] - zs[-2][system.n :]))))
                detail += "; degenerate (F = σ = a = 0 is singular here)"
                if meets_branch_points(model, z_end, system, problem, ref):
                    detail += ": the fold meets a line of branch points (a symmetric cusp)"
            ends.append(End("critical", system.params(z_end), system.states(z_end), detail, precision))
            # One step past the cusp lands on the partner fold line, a seed for tracing it.
            t = path.tangents[-1]
            u = z_end / system.scale
            system.accept(z_end)
            nxt = correct(system, line_limits(options), u + options.ds * t, t, scaled_jacobian(system, u)).u
            if nxt is not None:
                beyond.append(nxt * system.scale)
        else:
            ends.append(tracer.end(path))
    return tracer.line(both.points(), (ends[0], ends[1]), beyond=beyond)


def trace_fold_line(
    problem: Problem,
    x: np.ndarray,
    lam: Sequence[float],
    lam1_range: tuple[float, float],
    lam2_range: tuple[float, float],
    options: LineOptions | None = None,
    *,
    branches: Sequence[str] = (),
) -> Curve:
    """The fold line through the fold (x, λ) (refined at fixed λ1), within the parameter box."""
    opts = options or LineOptions()
    return trace_fold(problem, x, lam, parameter_box(problem, lam1_range, lam2_range), opts, branches).line
