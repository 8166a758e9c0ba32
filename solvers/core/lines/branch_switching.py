"""Branch switching at simple branch points of a one-parameter problem F(x, p) = 0.

At a simple zero eigenvalue of F_x with F_p in its range (⟨w, F_p⟩ = 0), the solutions near
(x0, p0) are given by the Lyapunov–Schmidt reduction x = x0 + ξ v + μ q + O(2), p = p0 + μ, whose
bifurcation equation is (see ``NormalForm``)

    g(ξ, μ) = a ξ²/2 + b11 ξ μ + b20 μ²/2 + c ξ³/6 + ... = 0.

* transcritical (a ≠ 0): two branches with tangents ξ/μ = (−b11 ± √(b11² − a b20)) / a;
* pitchfork (a = 0, as forced by a symmetry): the continued branch ξ/μ = −b20 / (2 b11) and the
  bifurcating branch μ = −c ξ² / (6 b11) + O(ξ³), tangent (v, 0).

For a pitchfork, the critical eigenvalue along the continued branch is b11 μ (⟨w, v⟩ = 1). With a
stability margin that has the sign s·(critical eigenvalue) (s = ±1, found from the margin itself),
the bifurcating branches lie where the continued branch is unstable — supercritical — exactly
when s·c > 0, and subcritical otherwise.

The branch point is first located precisely with the Moore-type extended system
[F + μψ; σ; ⟨w, F_p⟩] = 0 in (x, p, μ) (regular at a simple branch point, μ = 0 at the solution);
each branch is started by a predictor from the normal form and corrected by Newton on
[F; τ·(z − z_pred)] = 0, the bordered system of pseudo-arclength continuation, with τ the branch's
tangent (for the bifurcating pitchfork branch τ = (v, 0): the kernel coordinate is held at ±ξ0).

References: Kuznetsov, *Elements of Applied Bifurcation Theory*, 3rd ed., §10.2 (branch switching);
Keller, *Lectures on Numerical Methods in Bifurcation Problems* (1987), §5.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvers.core.lines.bordered import bordered_solve, fold_function, null_vectors
from solvers.core.lines.curves import branch_z, trace_branch
from solvers.core.lines.derivatives import Model, model_of, safe_margin
from solvers.core.lines.results import BranchStart
from solvers.core.newton import ROUND_OFF, newton
from solvers.core.options import LineOptions
from solvers.core.problem import Problem
from solvers.core.special_points import BifurcationPoint, Criticality, NormalForm

#: |a| below this fraction of max(|b11|, |c|) (in scaled units) counts as zero: a pitchfork.
SYMMETRIC_A = 1e-6
#: σ_min(F_x) and ⟨ŵ, F_λ⟩ below this fraction of the Jacobian's size count as zero (``point_kind``).
IN_RANGE = 1e-6
#: ⟨ŵ, F_λ⟩ below this fraction: a turning point may sit next to a branch point (located imprecisely
#: there), which the Moore system then confirms or refutes.
NEAR_RANGE = 1e-2


def p_scale(p: float) -> float:
    return max(1.0, abs(p))


def point_kind(
    model: Model, x: np.ndarray, lam: np.ndarray, x_scale: np.ndarray, lam_scale: np.ndarray, ref: float
) -> str:
    """"regular", "fold" or "branch_point" at (x, λ), judged in scaled units against ``ref``.

    ``ref`` is the typical size of the scaled Jacobian [F_x F_λ] near the point (e.g. its largest
    entry at the neighbouring curve points): F_x is singular when its smallest singular value is
    below 1e-6 ref, and a singular point is a branch point when every column of F_λ lies in the
    range of F_x to the same relative accuracy (⟨ŵ, F_λ⟩ ≈ 0).
    """
    singular, defect = singular_defects(model, x, lam, x_scale, lam_scale, ref)
    if singular > IN_RANGE:
        return "regular"
    return "branch_point" if defect <= IN_RANGE else "fold"


def singular_defects(
    model: Model, x: np.ndarray, lam: np.ndarray, x_scale: np.ndarray, lam_scale: np.ndarray, ref: float
) -> tuple[float, float]:
    """(σ_min(F_x), max_k |⟨ŵ, F_λk⟩|) relative to ``ref``, in scaled units (see ``point_kind``)."""
    A = model.jac_x(x, lam) * x_scale[None, :]
    if not np.all(np.isfinite(A)):
        return float("inf"), float("inf")
    _, w, smin, _ = null_vectors(A)
    L = model.jac_lam(x, lam) * lam_scale[None, :]
    return smin / ref, max(abs(float(w @ L[:, k])) for k in range(L.shape[1])) / ref


def jacobian_size(model: Model, zs: list[np.ndarray], scale: np.ndarray) -> float:
    """Largest entry of the scaled Jacobian [F_x F_λ] over some points (a reference size)."""
    sizes = [float(np.max(np.abs(model.jac_z(z) * scale[None, :]))) for z in zs]
    finite = [s for s in sizes if np.isfinite(s)]
    return max(finite, default=1.0) or 1.0


def locate_branch_point(
    problem: Problem, x: np.ndarray, p: float, options: LineOptions | None = None, *, max_iter: int = 40
) -> tuple[np.ndarray, float] | None:
    """(x*, p*) of the simple branch point near (x, p), or None when none converges there."""
    opts = options or LineOptions()
    model = model_of(problem)
    n = problem.dim
    x = np.asarray(x, dtype=float)
    try:
        v, w, _, _ = null_vectors(model.jac_x(x, np.array([p])))
    except np.linalg.LinAlgError:
        return None
    scale = np.concatenate([problem.x_scale(), [p_scale(p)], [1.0]])
    ep = np.zeros(n + 1)
    ep[n] = 1.0

    def M(u: np.ndarray) -> np.ndarray:
        z = u * scale
        xx, pp, mu = z[:n], z[n : n + 1], float(z[n + 1])
        try:
            bd = fold_function(model.jac_x(xx, pp), w, v)
        except np.linalg.LinAlgError:
            return np.full(n + 2, np.nan)
        f = model.residual(xx, pp) + mu * w
        return np.concatenate([f, [bd.sigma, float(bd.w @ model.d1(z[: n + 1], ep))]])

    res = newton(M, np.concatenate([x, [p, 0.0]]) / scale, tol=opts.tolerance, max_iterations=max_iter,
                 noise_floor=ROUND_OFF)
    if not res.converged:
        return None
    z = res.x * scale
    return z[:n].copy(), float(z[n])


def _criticality(
    problem: Problem, x0: np.ndarray, p0: float, continued: np.ndarray, nf: NormalForm
) -> Criticality | None:
    """Super/subcritical from the sign convention of the margin along the continued branch."""
    if not problem.has_margin or nf.b11 == 0 or nf.c == 0:
        return None
    n = problem.dim
    d = continued / continued[n]  # per unit of μ
    delta = 1e-4 * p_scale(p0)
    signs = []
    for mu in (delta, -delta):
        m = safe_margin(problem, x0 + mu * d[:n], p0 + mu)
        if not np.isfinite(m) or m == 0:
            return None
        signs.append(np.sign(m) * np.sign(nf.b11 * mu))
    if signs[0] != signs[1]:
        return None  # the margin does not follow the critical eigenvalue here
    return "supercritical" if signs[0] * nf.c > 0 else "subcritical"


def classify_branch_point(
    problem: Problem,
    x: np.ndarray,
    p: float,
    options: LineOptions | None = None,
    *,
    incoming: np.ndarray | None = None,
) -> BifurcationPoint | None:
    """Normal form and type of the branch point at (x, p) (already located), or None if it is not one.

    ``incoming`` (a tangent in (x, p)) names the branch the point was found on; its tangent is
    then listed first in ``tangents``.
    """
    model = model_of(problem)
    n = problem.dim
    x0 = np.asarray(x, dtype=float)
    z0 = np.concatenate([x0, [p]])
    lam = np.array([p])
    A = model.jac_x(x0, lam)
    v, w_unit, _, _ = null_vectors(A)
    overlap = float(w_unit @ v)
    if abs(overlap) < 1e-8:
        return None  # zero eigenvalue not algebraically simple
    w = w_unit / overlap
    ep = np.zeros(n + 1)
    ep[n] = 1.0
    Fp = model.d1(z0, ep)
    q = bordered_solve(A, w_unit, v, -Fp)
    vz = np.concatenate([v, [0.0]])
    qz = np.concatenate([q, [1.0]])
    a = float(w @ model.second(z0, vz))
    b11 = float(w @ model.mixed(z0, vz, qz))
    b20 = float(w @ model.second(z0, qz))
    y2 = bordered_solve(A, w_unit, v, -model.second(z0, vz))
    c = float(w @ model.third(z0, vz) + 3.0 * w @ model.mixed(z0, vz, np.concatenate([y2, [0.0]])))
    nf = NormalForm(a, b11, b20, c)
    sx = float(np.linalg.norm(problem.x_scale() * v))
    sp = p_scale(p)
    if abs(a) * sx * sx <= SYMMETRIC_A * max(abs(b11) * sx * sp, abs(c) * sx**3, 1e-300):
        kind = "pitchfork"
        continued = np.concatenate([-b20 / (2 * b11) * v + q, [1.0]]) if b11 != 0 else qz
        tangents = [continued, vz]
        criticality = _criticality(problem, x0, p, continued, nf)
    else:
        disc = b11 * b11 - a * b20
        if disc < 0:
            return None  # an isolated solution point, no real branches through it
        roots = [(-b11 + s * np.sqrt(disc)) / a for s in (1.0, -1.0)]
        tangents = [np.concatenate([r * v + q, [1.0]]) for r in roots]
        kind, criticality = "transcritical", None
    tangents = [t / np.linalg.norm(t) for t in tangents]
    found_on = None
    if incoming is not None:
        inc = np.asarray(incoming, dtype=float)
        inc = inc / np.linalg.norm(inc)
        tangents.sort(key=lambda t: -abs(float(t @ inc)))
        found_on = 0
    return BifurcationPoint(kind, float(p), x0, (v, w), nf, criticality, tuple(tangents), found_on)  # type: ignore[arg-type]


def _correct(model: Model, z_pred: np.ndarray, tau: np.ndarray, tol: float) -> np.ndarray | None:
    n = model.dim

    def fun(z: np.ndarray) -> np.ndarray:
        return np.concatenate([model.Fz(z), [float(tau @ (z - z_pred))]])

    def jac(z: np.ndarray) -> np.ndarray:
        return np.vstack([model.jac_z(z), tau])

    res = newton(fun, z_pred, tol=tol, jacobian=jac, noise_floor=ROUND_OFF)
    return res.x.copy() if res.converged and np.all(np.isfinite(res.x[: n + 1])) else None


def branch_off(
    problem: Problem,
    point: BifurcationPoint,
    options: LineOptions | None = None,
    *,
    bifurcating_only: bool = False,
    step_scale: np.ndarray | None = None,
) -> tuple[BranchStart, ...]:
    """First points on every branch through ``point``, both sides of it.

    Starts on the branch the point was found on (``point.found_on``) are marked
    ``bifurcating=False``; for a pitchfork the symmetry-breaking branch (v, 0) is the bifurcating
    one in any case. ``bifurcating_only``: start only the bifurcating branch(es).

    A start's predictor lies ``options.branch_amplitude`` (scaled) from the point; with ``step_scale``, the
    scale of (x, p) in which a continuation measures its steps, it lies at most ``options.ds_max`` from the
    point in those units as well: the switch is then no longer than one step of the curve it starts, so a
    start never falls outside a narrow parameter range that contains the branch point.
    """
    opts = options or LineOptions()
    model = model_of(problem)
    n = problem.dim
    x0 = np.asarray(point.x, dtype=float)
    z0 = np.concatenate([x0, [point.parameter]])
    v = np.asarray(point.kernel[0])
    S = np.concatenate([problem.x_scale(), [p_scale(point.parameter)]])
    nf = point.coefficients
    vnorm = float(np.linalg.norm(problem.x_scale() * v))
    starts: list[BranchStart] = []
    symmetric_index = None
    if point.type == "pitchfork":
        symmetric_index = int(np.argmax([abs(float(t[n])) < 1e-12 for t in point.tangents]))
    for i, tan in enumerate(point.tangents):
        bifurcating = i == symmetric_index if symmetric_index is not None else i != point.found_on
        if bifurcating_only and not bifurcating:
            continue
        others = [t for j, t in enumerate(point.tangents) if j != i]
        pitchfork = i == symmetric_index
        for side in (1, -1):
            amp = opts.branch_amplitude
            if step_scale is not None:
                # The offset's length grows convexly from 0 with amp (linearly, or as ‖(a·amp, b·amp²)‖), so
                # shrinking amp by reach/length brings it within reach.
                offset = _predictor(z0, v, nf, tan, S, vnorm, pitchfork, side * amp)[0] - z0
                length = float(np.linalg.norm(offset / step_scale))
                if length > opts.ds_max:
                    amp *= opts.ds_max / length
            for _ in range(6):
                z_pred, tau = _predictor(z0, v, nf, tan, S, vnorm, pitchfork, side * amp)
                z = _correct(model, z_pred, tau, opts.tolerance)
                if z is not None and _on_branch(z - z0, tan, others, S):
                    J = model.jac_z(z)
                    t_new = np.linalg.svd(J * S[None, :])[2][-1] * S
                    t_new = t_new / np.linalg.norm(t_new)
                    if float(t_new @ (z - z0)) < 0:
                        t_new = -t_new
                    starts.append(BranchStart(z[:n], float(z[n]), t_new, i, side, bifurcating))
                    break
                amp /= 2
    return tuple(starts)


def _predictor(
    z0: np.ndarray, v: np.ndarray, nf: NormalForm, tangent: np.ndarray, S: np.ndarray, vnorm: float,
    pitchfork: bool, step: float,
) -> tuple[np.ndarray, np.ndarray]:
    """(z_pred, τ): the normal form's point ``step`` (a signed scaled amplitude) along a branch from z0, and the
    direction the corrector holds. The bifurcating branch of a pitchfork is the parabola μ = −c ξ²/(6 b11) in
    the kernel coordinate ξ (``vnorm``: the scaled length of v); any other branch is its tangent line."""
    if pitchfork:
        xi = step * vnorm
        mu = -nf.c * xi * xi / (6 * nf.b11) if nf.b11 != 0 else 0.0
        return z0 + np.concatenate([xi * v, [mu]]), np.concatenate([v, [0.0]])
    d = tangent / S
    d = d / np.linalg.norm(d)
    return z0 + step * d * S, tangent / np.linalg.norm(tangent)


def _on_branch(dz: np.ndarray, tangent: np.ndarray, others: list[np.ndarray], S: np.ndarray) -> bool:
    """The offset from the branch point is closer to this branch's tangent line than to the others'."""
    d = dz / S
    nd = float(np.linalg.norm(d))
    if nd == 0:
        return False

    def cos(t: np.ndarray) -> float:
        u = t / S
        return abs(float(d @ u)) / (nd * float(np.linalg.norm(u)))

    return all(cos(tangent) > cos(o) for o in others)


@dataclass(frozen=True)
class BranchSwitch:
    """A branch point found along a branch, with the first points of the branches through it."""

    point: BifurcationPoint
    starts: tuple[BranchStart, ...]


def find_bifurcations(
    problem: Problem,
    x: np.ndarray,
    p: float,
    p_range: tuple[float, float],
    options: LineOptions | None = None,
) -> tuple[BranchSwitch, ...]:
    """Continue the branch through (x, p) over p_range; locate, classify and branch off every simple branch point."""
    opts = options or LineOptions()
    curve = trace_branch(problem, x, p, p_range, opts)
    z = branch_z(curve)
    model = model_of(problem)
    width = max(p_range) - min(p_range)
    scale = np.concatenate([problem.x_scale(), [width]])
    found: list[BranchSwitch] = []
    for mark in curve.marks:
        if mark.kind not in ("singular", "margin", "fold"):
            continue
        xs, ps = mark.x, mark.p
        ref = jacobian_size(model, [z[mark.index], z[min(mark.index + 1, len(z) - 1)]], scale)
        if point_kind(model, xs, np.array([ps]), scale[:-1], scale[-1:], ref) != "branch_point":
            continue
        located = locate_branch_point(problem, xs, ps, opts)
        if located is None:
            continue
        xb, pb = located
        if any(abs(s.point.parameter - pb) <= 1e-8 * p_scale(pb) and np.allclose(s.point.x, xb, atol=1e-7)
               for s in found):
            continue
        incoming = np.asarray(mark.tangent) * scale
        bp = classify_branch_point(problem, xb, pb, opts, incoming=incoming)
        if bp is None:
            continue
        found.append(BranchSwitch(bp, branch_off(problem, bp, opts)))
    return tuple(sorted(found, key=lambda s: s.point.parameter))
