"""Special points along λ2 at fixed λ1: the seeds of the lines.

The problem restricted to fixed λ1 is solved from its named starts at the ends and the middle of
the λ2 bracket; every solution not already on a traced curve starts a new curve, followed through
the whole bracket (``curves``). Each located monitor sign change is classified in the full
two-parameter problem (``point_kind``):

* a turning point in λ2 is a ``fold`` — unless F_λ lies in the range of F_x there, when it is the
  turning of a branch at a pitchfork, i.e. a branch point;
* a sign change of the stability margin at a regular F_x is a ``stability_loss`` (generic); at a
  singular F_x it is the fold (already listed) or a branch point (``stability_loss`` with its
  ``bifurcation`` classified from the normal form along λ2);
* a sign change of det F_x with no margin change is a branch point (``bifurcation``);
* a sign change of a named indicator is an ``event``.

First-order points are free-entropy crossings of two locally stable pieces of curve (pieces are
cut at every located point), located by Brent's method on Φ_A − Φ_B with both states
Newton-polished at each trial λ2. Mirror images (equal under ``canonical``) never coexist as two
phases: their free entropies are equal identically.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from solvers.core.curve import Curve, CurvePoint, interpolations
from solvers.core.lines.branch_switching import (
    NEAR_RANGE,
    classify_branch_point,
    jacobian_size,
    locate_branch_point,
    point_kind,
    singular_defects,
)
from solvers.core.lines.curves import branch_z, solve_state, trace_branch
from solvers.core.lines.derivatives import model_of, safe_scalar
from solvers.core.options import LineOptions
from solvers.core.problem import Problem, no_starts
from solvers.core.special_points import BifurcationPoint, SpecialKind


def _frozen(a: np.ndarray) -> np.ndarray:
    out = np.array(a, dtype=float)
    out.setflags(write=False)
    return out


#: Points of the common λ2 range of two stable pieces at which Φ_A − Φ_B is compared.
FIRST_ORDER_GRID = 25


@dataclass(frozen=True)
class ScanPoint:
    """A special point found at fixed λ1; ``states`` has one row per state (two for first-order)."""

    kind: SpecialKind
    lam: tuple[float, float]
    states: np.ndarray
    branches: tuple[str, ...]
    name: str = ""
    bifurcation: BifurcationPoint | None = None
    branch_point: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", SpecialKind(self.kind))
        object.__setattr__(self, "states", _frozen(np.atleast_2d(self.states)))


@dataclass(frozen=True)
class Scan:
    lam1: float
    curves: tuple[Curve, ...]
    points: tuple[ScanPoint, ...]
    notes: tuple[str, ...] = ()


@dataclass
class _Piece:
    """A piece of a branch between two of its marks."""

    name: str
    points: tuple[CurvePoint, ...]
    stable: bool | None

    @property
    def p_range(self) -> tuple[float, float]:
        ps = [q.p for q in self.points]
        return min(ps), max(ps)


def same_state(problem: Problem, a: np.ndarray, b: np.ndarray, tol: float) -> bool:
    if problem.canonical is not None:
        a, b = np.asarray(problem.canonical(a)), np.asarray(problem.canonical(b))
    return bool(np.all(np.abs(a - b) <= tol * problem.x_scale()))


def _known(problem: Problem, curves: list[Curve], x: np.ndarray, p: float, opts: LineOptions) -> bool:
    for curve in curves:
        for guess in interpolations(curve.points, p):
            if not same_state(problem, guess, x, 0.2):
                continue
            polished = solve_state(problem, guess, p, opts)
            if polished is not None and same_state(problem, polished, x, 1e-6):
                return True
    return False


def _pieces(problem: Problem, curve: Curve) -> tuple[list[_Piece], list[int]]:
    cuts = sorted({m.index for m in curve.marks if m.kind in ("fold", "singular", "margin")})
    bounds = [0, *[c + 1 for c in cuts], len(curve.points)]
    pieces = []
    for k, (a, b) in enumerate(itertools.pairwise(bounds)):
        if b <= a:
            continue
        points = curve.points[a:b]
        margins = np.array([np.nan if q.margin is None else q.margin for q in points])
        finite = margins[np.isfinite(margins)]
        stable = None if finite.size == 0 else bool(np.mean(finite > 0) > 0.5)
        mid = points[len(points) // 2]
        default = curve.name if len(bounds) == 2 else f"{curve.name}#{k}"
        pieces.append(_Piece(problem.name_of(mid.x, mid.p, default), points, stable))
    return pieces, cuts


def _piece_names(pieces: list[_Piece], index: int) -> tuple[str, ...]:
    """Names of the pieces on both sides of a mark between points ``index`` and ``index + 1``."""
    names: list[str] = []
    count = 0
    for k, piece in enumerate(pieces):
        count += len(piece.points)
        if count - 1 >= index:
            names.append(piece.name)
            if count - 1 == index and k + 1 < len(pieces):
                names.append(pieces[k + 1].name)
            break
    return tuple(dict.fromkeys(names))


def scan_special_points(
    problem: Problem,
    lam1: float,
    lam2_range: tuple[float, float],
    options: LineOptions | None = None,
    *,
    lam1_width: float = 1.0,
) -> Scan:
    """Every special point along λ2 ∈ lam2_range at fixed λ1 (see the module docstring)."""
    opts = options or LineOptions()
    if problem.starts is no_starts:
        raise ValueError("scanning for special points needs the problem's starts")
    p1 = problem.restrict(lam1)
    model1 = model_of(p1)
    model2 = model_of(problem)
    lo, hi = float(min(lam2_range)), float(max(lam2_range))
    width = hi - lo
    xs = problem.x_scale()
    curves: list[Curve] = []
    for p in (lo, hi, 0.5 * (lo + hi)):
        for start, x0 in problem.starts(np.array([lam1, p])).items():
            x = solve_state(p1, np.asarray(x0, dtype=float), p, opts)
            if x is None or _known(p1, curves, x, p, opts):
                continue
            name = p1.label(x, p, start) if p1.label is not None else start
            curves.append(trace_branch(p1, x, p, (lo, hi), opts, name=name))
    S1 = np.concatenate([xs, [width]])
    lam_sc = np.array([lam1_width, width])
    points: list[ScanPoint] = []
    notes: list[str] = []
    all_pieces: list[_Piece] = []
    for curve in curves:
        pieces, _ = _pieces(p1, curve)
        all_pieces.extend(pieces)
        z = branch_z(curve)
        margin_at = [m for m in curve.marks if m.kind == "margin"]
        for mark in curve.marks:
            x, p = np.array(mark.x), mark.p
            lam = np.array([lam1, p])
            names = _piece_names(pieces, mark.index)
            if mark.kind.startswith("event:"):
                points.append(ScanPoint(SpecialKind.EVENT, (lam1, p), x, names, name=mark.kind[len("event:"):]))
                continue
            ref = jacobian_size(model1, [z[mark.index], z[min(mark.index + 1, len(z) - 1)]], S1)
            kind = point_kind(model2, x, lam, xs, lam_sc, ref)
            located = None
            suspicious = kind == "branch_point" or singular_defects(model2, x, lam, xs, lam_sc, ref)[1] < NEAR_RANGE
            if suspicious and (kind != "regular" or mark.kind == "fold"):
                # A turning point next to a branch point is located poorly (the corrector may jump to
                # the other branch through it): confirm or refute a branch point with the Moore system.
                located = locate_branch_point(p1, x, p, opts, max_iter=15)
                z_mark = np.concatenate([mark.x, [mark.p]])
                if located is not None:
                    dist = np.max(np.abs((np.concatenate([located[0], [located[1]]]) - z_mark) / S1))
                    lam_b = np.array([lam1, located[1]])
                    ref_b = max(ref, jacobian_size(model1, [np.concatenate([located[0], [located[1]]])], S1))
                    if dist <= 1e-2 and point_kind(model2, located[0], lam_b, xs, lam_sc, ref_b) == "branch_point":
                        kind = "branch_point"
                    elif kind == "branch_point":
                        located = None
            if mark.kind == "fold" and kind != "branch_point":
                points.append(ScanPoint(SpecialKind.FOLD, (lam1, p), x, names))
                continue
            if mark.kind == "margin" and kind == "regular":
                points.append(ScanPoint(SpecialKind.STABILITY_LOSS, (lam1, p), x, names))
                continue
            if kind != "branch_point":
                continue
            if located is not None:
                x, p = located
            bp = classify_branch_point(p1, x, p, opts, incoming=np.asarray(mark.tangent) * S1)
            loses = mark.kind == "margin" or any(
                abs(m.p - p) <= 1e-6 * width and same_state(p1, m.x, x, 1e-5) for m in margin_at
            )
            kind_of = SpecialKind.STABILITY_LOSS if loses else SpecialKind.BIFURCATION
            points.append(ScanPoint(kind_of, (lam1, float(p)), x, names, bifurcation=bp, branch_point=True))
    if problem.free_entropy is None or problem.stability is None:
        notes.append("first-order points need the problem's free_entropy and stability")
    else:
        points.extend(_first_order_points(problem, p1, all_pieces, lam1, opts, width))
    return Scan(lam1, tuple(curves), tuple(_dedupe(p1, points, width)), tuple(notes))


def _first_order_points(
    problem: Problem, p1: Problem, pieces: list[_Piece], lam1: float,
    opts: LineOptions, width: float,
) -> list[ScanPoint]:
    phi = problem.free_entropy
    assert phi is not None
    stable = [pc for pc in pieces if pc.stable and len(pc.points) >= 2]
    out: list[ScanPoint] = []

    def state(piece: _Piece, p: float) -> np.ndarray:
        guesses = list(interpolations(piece.points, p))
        if not guesses:
            raise ValueError("outside the piece")
        x = solve_state(p1, guesses[0], p, opts)
        if x is None:
            raise ValueError("polish failed")
        return x

    for A, B in itertools.combinations(stable, 2):
        lo = max(A.p_range[0], B.p_range[0])
        hi = min(A.p_range[1], B.p_range[1])
        if hi <= lo:
            continue
        # The crossing only seeds the line (whose corrector solves the coexistence system exactly at
        # this λ1), so a modest grid and a loose Brent tolerance suffice.
        grid = list(np.linspace(lo, hi, FIRST_ORDER_GRID))

        def delta(p: float, A: _Piece = A, B: _Piece = B) -> float:
            xa, xb = state(A, p), state(B, p)
            lam = np.array([lam1, p])
            return safe_scalar(phi, xa, lam) - safe_scalar(phi, xb, lam)

        values: list[float | None] = []
        for p in grid:
            try:
                values.append(delta(p))
            except ValueError:
                values.append(None)
        # a grid value where the two free entropies are equal to the last bit (a symmetric box) is a root itself
        roots: list[float] = [p for p, d in zip(grid, values, strict=True) if d == 0.0]
        for k in range(len(grid) - 1):
            d0, d1 = values[k], values[k + 1]
            if d0 is None or d1 is None or not np.isfinite(d0 * d1) or d0 * d1 >= 0:
                continue
            try:
                roots.append(brentq(delta, grid[k], grid[k + 1], xtol=1e-9 * width, rtol=1e-12, maxiter=200))
            except (ValueError, RuntimeError):
                continue
        for pc in roots:
            try:
                xa, xb = state(A, pc), state(B, pc)
            except ValueError:
                continue
            if same_state(p1, xa, xb, opts.merge_distance):
                continue  # one state (or two that count as merged): no coexistence
            out.append(ScanPoint(SpecialKind.FIRST_ORDER, (lam1, float(pc)), np.vstack([xa, xb]), (A.name, B.name)))
    return out


_PRIORITY = {SpecialKind.STABILITY_LOSS: 0, SpecialKind.BIFURCATION: 1}


def _dedupe(problem: Problem, points: list[ScanPoint], width: float) -> list[ScanPoint]:
    """One point per location: mirror images and one branch point seen from two branches merge."""
    out: list[ScanPoint] = []
    for pt in sorted(points, key=lambda q: (_PRIORITY.get(q.kind, 2), q.lam[1])):
        twin = None
        for k, q in enumerate(out):
            if abs(q.lam[1] - pt.lam[1]) > 1e-6 * width or q.name != pt.name:
                continue
            family = {q.kind, pt.kind} <= {"stability_loss", "bifurcation"} and q.branch_point and pt.branch_point
            if (q.kind == pt.kind or family) and _same_states(problem, q.states, pt.states):
                twin = k
                break
        if twin is None:
            out.append(pt)
            continue
        q = out[twin]
        branches = tuple(dict.fromkeys([*q.branches, *pt.branches]))
        out[twin] = ScanPoint(q.kind, q.lam, q.states, branches, q.name, q.bifurcation or pt.bifurcation,
                              q.branch_point)
    return sorted(out, key=lambda q: q.lam[1])


def _same_states(problem: Problem, a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape:
        return False
    if all(same_state(problem, x, y, 1e-5) for x, y in zip(a, b, strict=True)):
        return True
    return a.shape[0] == 2 and all(same_state(problem, x, y, 1e-5) for x, y in zip(a, b[::-1], strict=True))
