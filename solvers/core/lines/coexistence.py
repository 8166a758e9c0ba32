"""First-order lines: two states of equal free entropy continued in (λ1, λ2).

One augmented system holds both states: z = (x_A, x_B, λ1, λ2) and

    F(x_A, λ) = 0,      F(x_B, λ) = 0,      Φ(x_A, λ) − Φ(x_B, λ) = 0,

2n + 1 equations in 2n + 2 unknowns. It is regular while the two states are distinct regular
solutions (a state passing its own fold keeps it regular too, but coexistence of *stable*
states ends there). Stopping rules:

* ``spinodal``: the stability margin of one state changes sign (with no margin given: det F_x
  of one state changes sign, i.e. it reaches a fold) — located along the arclength;
* ``critical``: the states merge (their scaled distance falls below ``merge_distance``, or their
  difference reverses). At a merge point the system is singular, so the end is not reached by
  the corrector: λ and the state are extrapolated to zero distance from the last points
  (polynomials in the signed half-distance δ), then, where the merge is a non-degenerate cusp,
  solved exactly by the cusp system F = σ = a = 0. ``precision`` is 0 for a solved cusp and the
  extrapolation's own error estimate (twice its change from degree d − 1 to d) otherwise. A
  ``spinodal`` stop with the two states closer than 10 ``merge_distance`` is a merge too (a
  tricritical-like end, where the margin is flat and its zero poorly conditioned).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from solvers.core.arclength import Box, Monitor, Path
from solvers.core.curve import Curve, End
from solvers.core.lines.bordered import singularity_indicator
from solvers.core.lines.branch_switching import jacobian_size
from solvers.core.lines.derivatives import Model, model_of, safe_scalar, scalar_gradient
from solvers.core.lines.fold import solve_cusp
from solvers.core.lines.tracing import (
    LineCoordinates,
    Traced,
    Tracer,
    lam_scale,
    parameter_box,
    polish_seed,
    run_two_way,
)
from solvers.core.options import LineOptions
from solvers.core.problem import Problem
from solvers.core.special_points import SpecialKind


def _joined(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


class CoexistenceSystem(LineCoordinates):
    """G = [F(x_A, λ); F(x_B, λ); Φ(x_A, λ) − Φ(x_B, λ)] in z = (x_A, x_B, λ1, λ2)."""

    def __init__(self, model: Model, phi: Callable[[np.ndarray, np.ndarray], float], x_scale: np.ndarray,
                 lam_sc: np.ndarray):
        self.model = model
        self.phi = phi
        self.n = model.dim
        self.x_scale = x_scale
        self.scale = np.concatenate([x_scale, x_scale, lam_sc])
        self.lam_index = (2 * self.n, 2 * self.n + 1)
        self.previous = self.current = np.zeros(self.n)

    def split(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = self.n
        return z[:n], z[n : 2 * n], z[2 * n :]

    def _phi(self, x: np.ndarray, lam: np.ndarray) -> float:
        return safe_scalar(self.phi, x, lam)

    def residual(self, z: np.ndarray) -> np.ndarray:
        xa, xb, lam = self.split(z)
        d = self._phi(xa, lam) - self._phi(xb, lam)
        return np.concatenate([self.model.residual(xa, lam), self.model.residual(xb, lam), [d]])

    def jacobian(self, z: np.ndarray) -> np.ndarray:
        n = self.n
        xa, xb, lam = self.split(z)
        J = np.zeros((2 * n + 1, 2 * n + 2))
        J[:n, :n] = self.model.jac_x(xa, lam)
        J[:n, 2 * n :] = self.model.jac_lam(xa, lam)
        J[n : 2 * n, n : 2 * n] = self.model.jac_x(xb, lam)
        J[n : 2 * n, 2 * n :] = self.model.jac_lam(xb, lam)
        ga = scalar_gradient(lambda y: self._phi(y[:n], y[n:]), np.concatenate([xa, lam]))
        gb = scalar_gradient(lambda y: self._phi(y[:n], y[n:]), np.concatenate([xb, lam]))
        J[2 * n, :n] = ga[:n]
        J[2 * n, n : 2 * n] = -gb[:n]
        J[2 * n, 2 * n :] = ga[n:] - gb[n:]
        return J

    def accept(self, z: np.ndarray) -> None:
        self.previous, self.current = self.current, self.difference(z)

    def merged(self, z: np.ndarray, distance: float) -> bool:
        """The states' difference reversed over the last step, or fell below ``distance``."""
        return float(self.current @ self.previous) < 0 or float(np.max(np.abs(self.current))) < distance

    def states(self, z: np.ndarray) -> np.ndarray:
        xa, xb, _ = self.split(z)
        return np.vstack([xa, xb])

    def difference(self, z: np.ndarray) -> np.ndarray:
        xa, xb, _ = self.split(z)
        return (xa - xb) / self.x_scale


def _margin_monitor(problem: Problem, model: Model, system: CoexistenceSystem, which: int) -> Monitor:
    def value(z: np.ndarray, tau: np.ndarray) -> float:
        x = system.split(z)[which]
        lam = z[2 * system.n :]
        if problem.stability is not None:
            return safe_scalar(problem.stability, x, lam)
        return singularity_indicator(model.jac_x(x, lam))

    return Monitor(f"spinodal_{'AB'[which]}", value, stop=True)


def _nearly_merged(system: CoexistenceSystem, z: np.ndarray, options: LineOptions) -> bool:
    return float(np.max(np.abs(system.difference(z)))) < 10 * options.merge_distance


def _merge_end(
    path: Path, system: CoexistenceSystem, model: Model, options: LineOptions
) -> tuple[End, np.ndarray | None]:
    """The critical point where the two states merge, from the last points of the path."""
    zs = list(path.z)
    # Drop points past a reversal of the difference (the corrector may have stepped across the merge).
    while len(zs) >= 3 and float(system.difference(zs[-1]) @ system.difference(zs[-2])) < 0:
        zs.pop()
    tail = zs[-8:]
    d_ref = system.difference(tail[-1])
    d_ref = d_ref / (np.linalg.norm(d_ref) or 1.0)
    delta = np.array([0.5 * float(system.difference(z) @ d_ref) for z in tail])
    n = system.n
    mids = np.array([0.5 * (z[:n] + z[n : 2 * n]) for z in tail])
    lams = np.array([z[2 * n :] for z in tail])
    deg = min(3, len(tail) - 2)
    lam_scale_ = system.scale[2 * n :]
    if deg < 1:
        z = tail[-1]
        end = End("critical", system.params(z), system.states(z), "the coexisting states merge (not extrapolated)",
                  float(np.max(np.abs(delta))))
        return end, None
    def extrapolate(values: np.ndarray, d: int) -> float:
        return float(np.polyval(np.polyfit(delta, values, d), 0.0))

    lam_ext = np.array([extrapolate(lams[:, j], deg) for j in range(2)])
    lam_low = np.array([extrapolate(lams[:, j], deg - 1) for j in range(2)])
    x_ext = np.array([extrapolate(mids[:, j], deg) for j in range(n)])
    # Twice the change from one degree less: a deliberately conservative error estimate.
    precision = 2.0 * float(np.max(np.abs(lam_ext - lam_low)))
    scale = np.concatenate([system.x_scale, lam_scale_])
    singles = [np.concatenate([z[:n], z[2 * n :]]) for z in zs[:: max(1, len(zs) // 8)]]
    ref = jacobian_size(model, singles, scale)
    cusp = solve_cusp(model, x_ext, lam_ext, scale, options, ref)
    reach = max(10.0 * float(np.max(np.abs(delta))), 10.0 * float(np.max(np.abs((lam_ext - lam_low) / lam_scale_))))
    if cusp is not None and float(np.max(np.abs((cusp - np.concatenate([x_ext, lam_ext])) / scale))) <= reach:
        xc, lc = cusp[:n], cusp[n:]
        detail, precision = "the coexisting states merge at a cusp (solved F = σ = a = 0)", 0.0
    else:
        xc, lc = x_ext, lam_ext
        detail = "the coexisting states merge (extrapolated to zero distance)"
    z_end = np.concatenate([xc, xc, lc])
    end = End("critical", system.params(z_end), system.states(z_end), detail, precision)
    return end, z_end


def trace_coexistence(
    problem: Problem,
    xa: np.ndarray,
    xb: np.ndarray,
    lam: Sequence[float],
    box: Box,
    options: LineOptions,
    branches: Sequence[str] = (),
) -> Traced:
    if problem.free_entropy is None:
        raise ValueError("a first-order line needs the problem's free_entropy")
    model = model_of(problem)
    system = CoexistenceSystem(model, problem.free_entropy, problem.x_scale(), lam_scale(box))
    tracer = Tracer(problem, system, SpecialKind.FIRST_ORDER, branches, "coexistence")
    z_seed = np.concatenate([np.asarray(xa, dtype=float), np.asarray(xb, dtype=float), np.asarray(lam, dtype=float)])
    z0 = polish_seed(system, z_seed, options, fix=2 * system.n)
    if z0 is None:
        return tracer.lost(z_seed, "the seed does not converge to coexistence")
    monitors = [_margin_monitor(problem, model, system, 0), _margin_monitor(problem, model, system, 1)]
    both = run_two_way(system, z0, options, box, monitors,
                      stop=lambda z: "terminated" if system.merged(z, options.merge_distance) else None)
    ends: list[End] = []
    extra: list[np.ndarray | None] = []
    for path in (both.backward, both.forward):
        z_end = path.z[-1]
        if path.end == "terminated":
            end, z_crit = _merge_end(path, system, model, options)
            ends.append(end)
            extra.append(z_crit)
        elif path.end.startswith("spinodal_") and _nearly_merged(system, z_end, options):
            # A state reaching its stability limit next to the other state: they merge there (a
            # tricritical-like end, where the margin is flat and its zero is poorly conditioned).
            end, z_crit = _merge_end(path, system, model, options)
            ends.append(End("critical", end.point, end.states,
                            _joined(end.detail, "where one state reaches its stability limit"), end.precision))
            extra.append(z_crit)
        elif path.end.startswith("spinodal_"):
            which = path.end[-1]
            detail = _joined(f"state {which} reaches its stability limit", path.detail)
            ends.append(tracer.end(path, "spinodal", detail))
            extra.append(None)
        else:
            ends.append(tracer.end(path))
            extra.append(None)
    points = both.points()
    if extra[0] is not None:
        points = [extra[0], *points]
    if extra[1] is not None:
        points = [*points, extra[1]]
    return tracer.line(points, (ends[0], ends[1]))


def trace_first_order_line(
    problem: Problem,
    xa: np.ndarray,
    xb: np.ndarray,
    lam: Sequence[float],
    lam1_range: tuple[float, float],
    lam2_range: tuple[float, float],
    options: LineOptions | None = None,
    *,
    branches: Sequence[str] = (),
) -> Curve:
    """The first-order line through coexisting states (x_A, x_B) at λ, within the parameter box."""
    opts = options or LineOptions()
    box = parameter_box(problem, lam1_range, lam2_range)
    return trace_coexistence(problem, xa, xb, lam, box, opts, branches).line
