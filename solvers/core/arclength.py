"""The one pseudo-arclength iterator: continuation of the solution curve of an augmented system G(z) = 0.

G maps R^(N+1) to R^N (states and free parameters in z), so its regular solutions form a curve. A
one-parameter problem is G(x, p) = F(x, p) with p free (:mod:`solvers.core.continuation`); fold,
equal-free-entropy, branch-point, stability-loss and event lines add equations and a second parameter
(:mod:`solvers.core.lines`). All of them are run here, in scaled coordinates u = z / ``scale``.

The iterator has an init / step / terminate protocol: :func:`init` makes the state at the first point,
:func:`step` makes one attempt (predict along the unit tangent τ, correct on the hyperplane
τ · (u − u_pred) = 0, accept or halve the step: halved where the corrector fails, where the tangent turns by
more than ``max_angle`` or where the correction is longer than the step itself) and :func:`terminate` says
whether and why it has ended. :func:`run` is the loop; a caller that reports progress runs the loop itself.

One corrector (:func:`solvers.core.corrector.correct`): Newton on the bordered system [G; τ · (u − u_pred)]
from the Jacobian at the point the step is predicted from (see that module).

One way to find points on the curve (:func:`locate`): monitors are scalar functions of (z, τ) evaluated
at every accepted point; a sign change between two points is located by Brent's method along the
arclength, each evaluation a corrector solve on the hyperplane of the earlier point (never with secant
updates, which near a singular point could slide onto another branch; by Newton with a fresh Jacobian at
every iterate where the limits ask for round-off), so the located point lies on the curve, not on its chord.
A monitor marked ``stop`` ends the curve there; leaving the parameter box ends it on the box's edge, located
the same way (or at its first point past the edge, for a box that the curve needs only to cover). A curve that
comes back round to its first point ends on it (``closed``), the step onto it searched like every other, so a
closed curve is traced once round and a special point next to (or at) its first point is located once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from solvers.core.corrector import Correction, Limits, System, correct, scaled_jacobian, tangent
from solvers.core.roots import bracketed_root
from solvers.core.step_size import next_step

#: A curve has come round to its first point when the corrector, on the first point's hyperplane, lands within this
#: fraction of the step of it.
CLOSING = 0.05


@dataclass(frozen=True)
class Monitor:
    """A test function ``value(z, tau)`` (tau: unit tangent in scaled coordinates)."""

    name: str
    value: Callable[[np.ndarray, np.ndarray], float]
    stop: bool = False


@dataclass(frozen=True)
class Box:
    """Bounds of the parameters z[lam_index]. A curve that leaves the box ends on its edge, located along the
    arclength (``exact``), or at its first point past the edge (a curve that needs only to cover the box)."""

    lo: np.ndarray
    hi: np.ndarray
    exact: bool = True


@dataclass
class Located:
    name: str
    z: np.ndarray
    tangent: np.ndarray
    index: int  # lies between points[index] and points[index + 1] of its path
    refined: bool = True
    #: The largest parameter distance (max norm over lam_index) from ``z`` to the corrected points at the
    #: ends of the root finder's final bracket; half the step when not refined.
    uncertainty: float = 0.0


@dataclass
class Path:
    """One continuation run in one direction from its first point."""

    z: list[np.ndarray]
    tangents: list[np.ndarray]
    values: list[np.ndarray]
    located: list[Located] = field(default_factory=list)
    #: "max_points", "lost" (the corrector fails at ds_min), "domain" (the box's edge), "closed", the name of a
    #: stop monitor, or the reason a ``stop`` hook gave.
    end: str = ""
    detail: str = ""
    #: 0 when the end was located on the curve; else the parameter step that brackets it (max norm).
    end_precision: float = 0.0


@dataclass
class State:
    """The iterator's state after its last step (``step`` updates it in place and returns it)."""

    system: System
    limits: Limits
    box: Box
    monitors: Sequence[Monitor]
    stop: Callable[[np.ndarray], str | None] | None
    u: np.ndarray
    t: np.ndarray
    J: np.ndarray
    vals: np.ndarray
    ds: float
    path: Path
    u_first: np.ndarray
    #: The corrector solve of the last rejected step (why a "lost" curve ended) and its predicted point.
    failure: Correction | None = None
    predicted: np.ndarray | None = None


def monitor_values(system: System, monitors: Sequence[Monitor], u: np.ndarray, t: np.ndarray) -> np.ndarray:
    z = u * np.asarray(system.scale, dtype=float)
    return np.array([float(m.value(z, t)) for m in monitors])


@dataclass(frozen=True)
class Found:
    """A located zero: the point (scaled), its tangent, its arclength from the bracket's start, and how well its
    parameters are known (see :attr:`Located.uncertainty`)."""

    u: np.ndarray
    t: np.ndarray
    s: float
    uncertainty: float


class _CorrectorFailed(Exception):
    pass


def locate(
    system: System,
    limits: Limits,
    u_a: np.ndarray,
    t_a: np.ndarray,
    J_a: np.ndarray,
    u_b: np.ndarray,
    g: Callable[[np.ndarray, np.ndarray], float],
    g_a: float,
    g_b: float | None = None,
    *,
    exact: bool = False,
) -> Found | None:
    """Zero of g(z, τ) on the curve between u_a and u_b (None if a corrector fails or g does not change sign).

    ``u_b`` was corrected on the hyperplane of (u_a, t_a) at s_b = t_a · (u_b − u_a), so ``g_b`` is its value
    there; without ``g_b`` the value at s_b is corrected afresh, and where it has not changed sign the bracket
    is widened by 5 % once (a point not corrected from u_a lies near that hyperplane, not on it). ``exact``: each
    evaluation by Newton with a fresh Jacobian at every iterate (see :class:`Limits`), and a root found exactly
    is probed at the tolerance on either side, so that its uncertainty says what the tolerance does.
    """
    S = np.asarray(system.scale, dtype=float)
    lam = np.asarray(system.lam_index)
    s_b = float(t_a @ (u_b - u_a))
    if not s_b > 0:
        return None
    cache: dict[float, tuple[np.ndarray, np.ndarray]] = {}

    def solve(s: float) -> tuple[np.ndarray, np.ndarray]:
        c = correct(system, limits, u_a + s * t_a, t_a, J_a, fresh=exact)
        if c.u is None:
            raise _CorrectorFailed
        t = tangent(scaled_jacobian(system, c.u), t_a)
        if t is None:
            raise _CorrectorFailed
        cache[s] = (c.u, t)
        return c.u, t

    def value(s: float) -> float:
        if s == 0.0:
            return g_a
        if s == s_b and g_b is not None:
            return g_b
        u, t = solve(s)
        return float(g(u * S, t))

    try:
        hi = s_b
        if g_b is None and _same_sign(value(hi), g_a):
            hi = 1.05 * s_b
            if _same_sign(value(hi), g_a):
                return None
        root = bracketed_root(value, 0.0, hi, xtol=1e-14 * max(1.0, s_b), rtol=4 * np.finfo(float).eps,
                              failures=(_CorrectorFailed, np.linalg.LinAlgError), probe=exact)
        s = root.x
        if s not in cache:
            if s == 0.0:
                t0 = tangent(scaled_jacobian(system, u_a), t_a)
                if t0 is None:
                    return None
                cache[s] = (u_a, t0)
            elif s == s_b and g_b is not None:
                tb = tangent(scaled_jacobian(system, u_b), t_a)
                if tb is None:
                    return None
                cache[s] = (u_b, tb)
            else:
                solve(s)
    except (_CorrectorFailed, RuntimeError, ValueError, np.linalg.LinAlgError):
        return None
    u, t = cache[s]
    known = {0.0: u_a, **({s_b: u_b} if g_b is not None else {}), **{k: v[0] for k, v in cache.items()}}
    z = u * S
    ends = [known[e] * S for e in (root.lo, root.hi) if e in known]
    # At a fold the parameter is quadratic in s, so the bracket's ends can agree with the root to the last bit:
    # a few units in the last place are the least a location computed in floating point is known to.
    floor = _round_off(z, lam)
    spread = [float(np.max(np.abs(e[lam] - z[lam]))) for e in ends]
    return Found(u, t, s, max(floor, *spread))


def _same_sign(v: float, ref: float) -> bool:
    return bool(np.sign(v) == np.sign(ref))


def _sign_change(a: float, b: float) -> bool:
    return bool(np.isfinite(a) and np.isfinite(b) and a * b < 0)


# ---- the protocol ---------------------------------------------------------------------------------------------
def init(
    system: System,
    z0: np.ndarray,
    t0: np.ndarray,
    limits: Limits,
    *,
    box: Box,
    monitors: Sequence[Monitor] = (),
    stop: Callable[[np.ndarray], str | None] | None = None,
) -> State:
    """The state at the first point z0 (on the curve), heading along the scaled tangent t0.

    ``stop``: called with every accepted point after it is recorded; a reason it returns ends the curve there.
    """
    system.accept(z0)
    S = np.asarray(system.scale, dtype=float)
    u = np.asarray(z0, dtype=float) / S
    t = np.asarray(t0, dtype=float) / np.linalg.norm(t0)
    J = scaled_jacobian(system, u)
    vals = monitor_values(system, monitors, u, t)
    path = Path([np.array(z0, dtype=float)], [t.copy()], [vals])
    return State(system, limits, box, monitors, stop, u, t, J, vals, limits.step.ds, path, u.copy())


def terminate(state: State) -> tuple[bool, str]:
    """Whether the run has ended, and why (see :attr:`Path.end`)."""
    if state.path.end:
        return True, state.path.end
    if len(state.path.z) >= state.limits.max_points:
        state.path.end = "max_points"
        return True, "max_points"
    return False, ""


def step(state: State) -> State:
    """One attempt from the last point: accept a new point (possibly the curve's end), or halve the step."""
    opt = state.limits.step
    system, path = state.system, state.path
    S = np.asarray(system.scale, dtype=float)
    u, t, J, vals, ds = state.u, state.t, state.J, state.vals, state.ds
    u_pred = u + ds * t
    closing = _closing_step(state)
    if closing is not None:
        c, u_new, t_new, J_new = closing
    else:
        c = correct(system, state.limits, u_pred, t, J, secant=state.limits.secant)
        u_new, t_new, J_new = c.u, None, None
        if u_new is not None and ds > opt.ds_min * 1.01 and float(np.linalg.norm(u_new - u_pred)) > ds:
            # On its hyperplane the corrector may converge to a distant part of the solution set (a mirror branch
            # far away): a correction of the curve itself is small against the step (second order in it).
            u_new = None
        if u_new is not None:
            J_new = scaled_jacobian(system, u_new)
            t_new = tangent(J_new, t)
            turn = np.inf if t_new is None else float(np.arccos(np.clip(float(t_new @ t), -1.0, 1.0)))
            if t_new is None or (turn > opt.max_angle and ds > opt.ds_min * 1.01):
                u_new = None
            if not np.all(np.isfinite(J_new)):  # the curve reaches where its equations cannot be differentiated
                c = Correction(None, c.iterations, c.residual, left_domain=True)
    if u_new is None or t_new is None or J_new is None:
        state.failure, state.predicted = c, u_pred * S
        if ds <= opt.ds_min * 1.01:
            path.end, path.detail = "lost", "the corrector fails at the smallest step"
        else:
            state.ds = max(opt.ds_min, ds / 2)
        return state
    monitors = state.monitors
    # The step that closes a loop ends on the first point itself, with its first values.
    vals_new = path.values[0] if closing is not None else monitor_values(system, monitors, u_new, t_new)
    # Candidate ends inside this step: the box edge and every stop monitor changing sign. Each is
    # (s, reason, u, tangent, bracket): bracket 0 when located on the curve, else the parameter step within
    # which the corrector could not locate it.
    ends: list[tuple[float, str, np.ndarray, np.ndarray, float]] = []
    lam_idx = np.asarray(system.lam_index)
    box = state.box
    width = (box.hi - box.lo) / S[lam_idx]
    z_a, z_b = u * S, (path.z[0].copy() if closing is not None else u_new * S)
    jump = float(np.max(np.abs(z_b[lam_idx] - z_a[lam_idx])))
    for k, idx in enumerate(lam_idx):
        for bound, outside in ((box.lo[k], z_b[idx] < box.lo[k]), (box.hi[k], z_b[idx] > box.hi[k])):
            if not outside:
                continue
            if abs(z_a[idx] - bound) <= 1e-12 * max(1.0, width[k] * S[idx]):
                # Leaving through the edge it starts on, the curve is outside the box at once: any other edge this
                # step crosses (near a corner) lies beyond that.
                path.end, path.detail = "domain", "the line starts on the edge of the box and leaves it"
                return state
            if not box.exact:
                ends.append((float(t @ (u_new - u)), "domain", u_new, t_new, 0.0))
                continue

            def edge(z: np.ndarray, tau: np.ndarray, idx: int = idx, bound: float = bound) -> float:
                return float(z[idx] - bound)

            found = locate(system, state.limits, u, t, J, u_new, edge, float(z_a[idx] - bound),
                           float(z_b[idx] - bound))
            if found is not None:
                uu = found.u.copy()
                uu[idx] = bound / S[idx]  # on the edge to round-off
                ends.append((found.s, "domain", uu, found.t, 0.0))
            else:
                ends.append((0.0, "domain", u, t, jump))
    for i, m in enumerate(monitors):
        if m.stop and _sign_change(vals[i], vals_new[i]):
            found = _locate_on_step(state, u_new, t_new, J_new, m, float(vals[i]), float(vals_new[i]))
            if found is not None:
                ends.append((found.s, m.name, found.u, found.t, 0.0))
            else:
                ends.append((float(t @ (u_new - u)), m.name, u_new, t_new, jump))
    s_end = min((e[0] for e in ends), default=np.inf)
    for i, m in enumerate(monitors):
        if not m.stop and _sign_change(vals[i], vals_new[i]):
            found = _locate_on_step(state, u_new, t_new, J_new, m, float(vals[i]), float(vals_new[i]))
            if found is not None and found.s <= s_end:
                path.located.append(Located(m.name, found.u * S, found.t, len(path.z) - 1,
                                            uncertainty=found.uncertainty))
            elif found is None and s_end == np.inf:
                mid = 0.5 * (u + u_new)
                path.located.append(Located(m.name, mid * S, t_new, len(path.z) - 1, refined=False,
                                            uncertainty=jump / 2))
        elif (closing is not None and not m.stop and s_end == np.inf and vals_new[i] == 0
              and _sign_change(vals[i], path.values[1][i])):
            # A zero exactly at the first point changes sign across it (from this step's start to the second
            # point): no step of the loop sees it, so the closing step locates it, at the first point.
            z_first = path.z[0]
            path.located.append(Located(m.name, z_first.copy(), t_new, len(path.z) - 1,
                                        uncertainty=_round_off(z_first, lam_idx)))
    if ends:
        s, why, uu, tt, bracket = min(ends, key=lambda e: e[0])
        if s > 0:
            system.accept(uu * S)
            path.z.append(uu * S)
            path.tangents.append(tt)
            path.values.append(monitor_values(system, monitors, uu, tt))
        path.end, path.end_precision = why, bracket
        if bracket > 0:
            path.detail = "not located on the curve (the corrector fails there); bracketed by the last step"
        return state
    system.accept(z_b)
    path.z.append(z_b)
    path.tangents.append(t_new)
    path.values.append(vals_new)
    state.u, state.t, state.J, state.vals = u_new, t_new, J_new, vals_new
    reason = state.stop(z_b) if state.stop is not None else None
    if reason:
        path.end = reason
        return state
    back = state.u_first - u_new
    # (the second test catches a loop whose closing step failed: it ends within half a step past its start)
    passed = len(path.z) > 10 and float(np.linalg.norm(back)) < 0.5 * ds and float(t_new @ back) <= 0
    if closing is not None or passed:
        path.end = "closed"
        return state
    state.ds = next_step(ds, c.iterations, opt)
    return state


def _closing_step(state: State) -> tuple[Correction, np.ndarray, np.ndarray, np.ndarray] | None:
    """The step that closes a loop: where the first point lies ahead within the next step, the corrector solve on
    the first point's hyperplane (its distance along the tangent), which is the first point itself when the curve
    has come round to it. Then (the solve, the first point, its first tangent, the Jacobian there); else None.

    Ending on the first point itself, the loop is traced exactly once round, and the step from the last point
    to it is searched for special points like every other: a special point between the two (a fold next to where
    the loop started) is on no other step.
    """
    path, u, t, ds = state.path, state.u, state.t, state.ds
    if len(path.z) < 3:
        return None
    d = state.u_first - u
    s = float(t @ d)
    if not 0 < s <= ds or float(np.linalg.norm(d - s * t)) > ds:
        return None
    c = correct(state.system, state.limits, u + s * t, t, state.J, secant=state.limits.secant)
    if c.u is None or float(np.linalg.norm(c.u - state.u_first)) > CLOSING * ds:
        return None  # another part of the curve passes the first point: not round yet
    J_new = scaled_jacobian(state.system, c.u)
    t_new = tangent(J_new, t)
    t_first = path.tangents[0]
    # the same way through the first point (not a branch crossing it)
    if t_new is None or float(t_new @ t_first) < np.cos(state.limits.step.max_angle):
        return None
    return c, state.u_first.copy(), t_first, J_new


def _round_off(z: np.ndarray, lam: np.ndarray) -> float:
    """A few units in the last place of the parameters: the least a location computed in floating point is known
    to."""
    return 4 * float(np.max(np.spacing(np.abs(z[lam]))))


def _locate_on_step(
    state: State, u_new: np.ndarray, t_new: np.ndarray, J_new: np.ndarray, m: Monitor, g_a: float, g_b: float
) -> Found | None:
    """The zero of monitor ``m`` on the step from the state's point to ``u_new``, located from the step's start;
    where the limits ask for exact locations and a corrector fails on the way (Newton converges slowly next to a
    singular point, e.g. a fold at a branch point), located again from the step's end backwards."""
    system, limits, u, t = state.system, state.limits, state.u, state.t
    found = locate(system, limits, u, t, state.J, u_new, m.value, g_a, g_b, exact=limits.exact)
    if found is not None or not limits.exact:
        return found
    S = np.asarray(system.scale, dtype=float)
    back = locate(system, limits, u_new, -t_new, J_new, u, m.value, float(m.value(u_new * S, -t_new)), exact=True)
    if back is None:
        return None
    return Found(back.u, -back.t, float(t @ (back.u - u)), back.uncertainty)


def run(
    system: System,
    z0: np.ndarray,
    t0: np.ndarray,
    limits: Limits,
    *,
    box: Box,
    monitors: Sequence[Monitor] = (),
    stop: Callable[[np.ndarray], str | None] | None = None,
) -> Path:
    """Continue from z0 along the scaled tangent t0 until the run terminates."""
    state = init(system, z0, t0, limits, box=box, monitors=monitors, stop=stop)
    while not terminate(state)[0]:
        step(state)
    return state.path


@dataclass
class TwoWay:
    """A curve traced both ways from its seed: ``backward`` and ``forward`` start at the seed."""

    backward: Path
    forward: Path

    def points(self) -> list[np.ndarray]:
        return [*reversed(self.backward.z[1:]), *self.forward.z]

    def tangents(self) -> list[np.ndarray]:
        return [*(-t for t in reversed(self.backward.tangents[1:])), *self.forward.tangents]

    def values(self) -> list[np.ndarray]:
        return [*reversed(self.backward.values[1:]), *self.forward.values]

    def located(self) -> list[Located]:
        """Located points with indices into ``points()``."""
        nb = len(self.backward.z) - 1
        out = [Located(p.name, p.z, -p.tangent, nb - 1 - p.index, p.refined, p.uncertainty)
               for p in self.backward.located]
        out += [Located(p.name, p.z, p.tangent, nb + p.index, p.refined, p.uncertainty) for p in self.forward.located]
        return sorted(out, key=lambda p: p.index)


def trace_two_way(
    system: System,
    z0: np.ndarray,
    t0: np.ndarray,
    limits: Limits,
    *,
    box: Box,
    monitors: Sequence[Monitor] = (),
    stop: Callable[[np.ndarray], str | None] | None = None,
) -> TwoWay:
    """Continue from z0 along +t0 and then along −t0 (t0 in scaled coordinates); a closed curve only once."""
    fwd = run(system, z0, t0, limits, box=box, monitors=monitors, stop=stop)
    if fwd.end == "closed":
        return TwoWay(Path([np.array(z0, dtype=float)], [t0], [fwd.values[0]], end="closed"), fwd)
    bwd = run(system, z0, -t0, limits, box=box, monitors=monitors, stop=stop)
    return TwoWay(bwd, fwd)
