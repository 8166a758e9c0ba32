"""What a figure of a sweep draws, as plain data (no matplotlib): each branch's stretches of one stability, the
equilibrium path with its jumps, and where each special point lies on its curve.

A continuation result serves the curves it traced (:attr:`clients.result.Result.curves`,
``docs/architecture.md``): every row a solution, folds as turning points shared by the two branches that meet there,
each special point a row of the curves it involves. Figures are drawn from them, so folds close and jumps sit at their
refined values. A result without curves (a grid sweep) is drawn from its requested values only, and nothing is drawn
between them that was not computed.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from clients.names import is_number
from clients.result import Curve, Result, Transition

#: Two parameter values closer than this fraction of the swept range are the same point.
SAME = 1e-9


@dataclass(frozen=True)
class Stretch:
    """A piece of one branch with one stability (None: the theory gives none), in the order it was traced."""

    branch: str
    stable: bool | None
    x: list[float]
    y: list[float]


@dataclass(frozen=True)
class CurveMark:
    """A special point where it lies on a traced curve (a fold is its turning point)."""

    kind: str
    type: str | None
    parameter: float
    y: float
    branches: tuple[str, ...]
    event: str | None = None


def _number(v: Any) -> float | None:
    return float(v) if is_number(v) and math.isfinite(v) else None


def traced(result: Result, quantity: str) -> list[Curve]:
    """The traced curves of a one-parameter result that carry ``quantity`` (none for a grid sweep)."""
    return [c for c in result.curves if c.values(quantity) is not None]


def _requested_values(result: Result) -> list[float]:
    """The swept values that are one number each (a sweep's), in the points' order."""
    return [x for x in result.parameter_values if is_number(x)]


def _span(result: Result) -> float:
    xs = _requested_values(result)
    return (max(xs) - min(xs)) if len(xs) > 1 else 1.0


#: Points drawn between two traced rows of a curve, on a smooth curve through them (see :func:`_smooth`).
BETWEEN_ROWS = 6

Row = tuple[str, float, float, Any]  # (branch, parameter, value, stable)


def _tangents(t: list[float], c: list[float]) -> list[float]:
    """Slopes dc/dt at each row for a monotone piecewise-cubic curve through (t, c) (Fritsch–Carlson): the
    three-point slope, zero where c turns (a fold's parameter, an extremum of the value), limited to three times the
    neighbouring secants, so that the curve never overshoots its rows: a fold stays the end of both branches."""
    h = [b - a for a, b in itertools.pairwise(t)]
    d = [(c1 - c0) / dt for (c0, c1), dt in zip(itertools.pairwise(c), h, strict=True)]
    m = [d[0], *([0.0] * (len(d) - 1)), d[-1]]
    for i in range(1, len(d)):
        if d[i - 1] * d[i] > 0:
            m[i] = (d[i - 1] * h[i] + d[i] * h[i - 1]) / (h[i - 1] + h[i])
    for i, slope in enumerate(m):
        secants = [abs(d[k]) for k in (i - 1, i) if 0 <= k < len(d)]
        m[i] = math.copysign(min(abs(slope), 3.0 * min(secants)), slope)
    return m


def _smooth(rows: list[Row], scale: tuple[float, float]) -> list[Row]:
    """The rows of one unbroken piece of a curve with :data:`BETWEEN_ROWS` points of a smooth curve between each
    two: a cubic in the chord length (in coordinates scaled to unit range, so that "smooth" means smooth as drawn)
    through every row, monotone between rows in the parameter and in the value. A curve traced in arclength
    passes a fold with a continuous tangent; straight segments between its rows would draw a corner just past
    it. A point between two rows takes the branch and stability of the later one."""
    if len(rows) < 3:
        return rows
    sx, sy = scale
    xs, ys = [r[1] / sx for r in rows], [r[2] / sy for r in rows]
    t = [0.0]
    for (x0, y0), (x1, y1) in itertools.pairwise(zip(xs, ys, strict=True)):
        t.append(t[-1] + math.hypot(x1 - x0, y1 - y0))
    mx, my = _tangents(t, xs), _tangents(t, ys)
    out: list[Row] = [rows[0]]
    for i in range(len(rows) - 1):
        dt = t[i + 1] - t[i]
        branch, stable = rows[i + 1][0], rows[i + 1][3]
        for k in range(1, BETWEEN_ROWS + 1):
            u = k / (BETWEEN_ROWS + 1)
            h00, h10, h01, h11 = (2 * u**3 - 3 * u**2 + 1, u**3 - 2 * u**2 + u, -2 * u**3 + 3 * u**2, u**3 - u**2)
            x = h00 * xs[i] + h10 * dt * mx[i] + h01 * xs[i + 1] + h11 * dt * mx[i + 1]
            y = h00 * ys[i] + h10 * dt * my[i] + h01 * ys[i + 1] + h11 * dt * my[i + 1]
            out.append((branch, x * sx, y * sy, stable))
        out.append(rows[i + 1])
    return out


def _pieces(curve: Curve, quantity: str) -> list[list[Row]]:
    """A curve's unbroken runs of rows (a row without a value breaks it), a row repeated at the same point (a fold's,
    written once per branch) kept once, each run drawn smooth through its rows."""
    ys = curve.values(quantity) or []
    runs: list[list[Row]] = [[]]
    for branch, x, y, stable in zip(curve.branch, curve.parameter, ys, curve.stable, strict=True):
        y = _number(y)
        if y is None or x is None:
            runs.append([])
            continue
        run = runs[-1]
        if run and (run[-1][1], run[-1][2]) == (float(x), y):
            continue
        run.append((branch, float(x), y, stable))
    rows = [r for run in runs for r in run]
    if not rows:
        return []
    xs, vs = [r[1] for r in rows], [r[2] for r in rows]
    scale = ((max(xs) - min(xs)) or 1.0, (max(vs) - min(vs)) or 1.0)
    return [_smooth(run, scale) for run in runs if run]


def _curve_stretches(curve: Curve, quantity: str) -> list[Stretch]:
    """A curve's stretches of one (branch, stability) in the order traced, drawn smooth through its rows; each
    starts where the last one ended, so the curve stays one line."""
    out: list[Stretch] = []
    for run in _pieces(curve, quantity):
        current: Stretch | None = None
        previous: tuple[float, float] | None = None
        for branch, x, y, stable in run:
            if current is None or (branch, stable) != (current.branch, current.stable):
                current = Stretch(branch, stable, [], [])
                if previous is not None:
                    current.x.append(previous[0])
                    current.y.append(previous[1])
                out.append(current)
            current.x.append(x)
            current.y.append(y)
            previous = (x, y)
    return out


def _monotone(s: Stretch) -> list[Stretch]:
    """A stretch cut where it turns back in the parameter (a mirror image traced back over itself), each piece
    keeping the turning point."""
    pieces: list[Stretch] = []
    start, direction = 0, 0.0
    for i in range(1, len(s.x)):
        step = s.x[i] - s.x[i - 1]
        if step * direction < 0:  # turned back at the row before (rows repeated at a special point do not count)
            pieces.append(Stretch(s.branch, s.stable, s.x[start:i], s.y[start:i]))
            start = i - 1
        if step != 0:
            direction = step
    pieces.append(Stretch(s.branch, s.stable, s.x[start:], s.y[start:]))
    return pieces


def _covers(p: Stretch, q: Stretch, tol_x: float, tol_y: float) -> bool:
    """Whether monotone piece ``q`` lies on monotone piece ``p`` (same branch and stability)."""
    if (p.branch, p.stable) != (q.branch, q.stable) or len(p.x) < 2:
        return False
    order = sorted(range(len(p.x)), key=p.x.__getitem__)
    px, py = [p.x[i] for i in order], [p.y[i] for i in order]
    for x, y in zip(q.x, q.y, strict=True):
        if x < px[0] - tol_x or x > px[-1] + tol_x:
            return False
        k = min(max(bisect.bisect_left(px, x), 1), len(px) - 1)
        x0, x1, y0, y1 = px[k - 1], px[k], py[k - 1], py[k]
        on = y0 if x1 == x0 else y0 + (y1 - y0) * (min(max(x, x0), x1) - x0) / (x1 - x0)
        if abs(on - y) > tol_y:
            return False
    return True


def _without_retraces(pieces: list[Stretch], tol_x: float, tol_y: float) -> list[Stretch]:
    """Leave out every piece that lies on a longer one (a curve through a symmetric point traces each mirror
    image, which reads the same in a symmetric quantity): a dashed line is never drawn twice over itself."""
    kept: list[int] = []
    for i in sorted(range(len(pieces)), key=lambda i: -len(pieces[i].x)):  # the most finely traced first
        if not any(_covers(pieces[k], pieces[i], tol_x, tol_y) for k in kept):
            kept.append(i)
    return [pieces[i] for i in sorted(kept)]


def _point_stretches(result: Result, quantity: str, branch: str) -> list[Stretch]:
    """A branch at the requested values only (a grid sweep): consecutive values where it exists."""
    out: list[Stretch] = []
    current: Stretch | None = None
    for x, value, state in zip(result.parameter_values, result.values(quantity, branch), result.states(branch),
                               strict=True):
        y = _number(value) if state is not None and state.converged else None
        if y is None or state is None:
            current = None
            continue
        stable = state.stable
        if current is None or stable != current.stable:
            start = ([current.x[-1]], [current.y[-1]]) if current is not None else ([], [])
            current = Stretch(branch, stable, *start)
            out.append(current)
        current.x.append(float(x))
        current.y.append(y)
    return out


def stretches(result: Result, quantity: str, branches: Sequence[str]) -> list[Stretch]:
    """Every branch's stretches of one stability: from the traced curves, else from the requested values."""
    curves = traced(result, quantity)
    if curves:
        pieces = [p for c in curves for s in _curve_stretches(c, quantity) if s.branch in branches
                  for p in _monotone(s)]
        ys = [y for p in pieces for y in p.y]
        scale = (max(ys) - min(ys)) if ys else 1.0
        # within 1 % of the drawn range a retrace is invisible, whatever the spacing of its rows near a fold
        return _without_retraces(pieces, SAME * _span(result), 1e-2 * (scale or 1.0))
    return [s for name in branches for s in _point_stretches(result, quantity, name)]


def curve_marks(result: Result, quantity: str) -> list[CurveMark]:
    """The special points on the traced curves, each once per (kind, parameter, value)."""
    seen: set[tuple[str, float, float]] = set()
    out: list[CurveMark] = []
    # an engine event filed under a kind (plain mean field's alignment onset as first_order) is named by its
    # transition; the curves' rows of it do not repeat the event
    events = {(t.kind, round(t.parameter, 9)): t.event for t in result.transitions
              if t.event and t.parameter is not None}
    for curve in traced(result, quantity):
        ys = curve.values(quantity) or []
        for sp in curve.special:
            y = _number(ys[sp.index]) if 0 <= sp.index < len(ys) else None
            if y is None:
                continue
            key = (sp.kind, round(sp.parameter, 9), round(y, 9))
            if key not in seen:
                seen.add(key)
                out.append(CurveMark(sp.kind, sp.type, sp.parameter, y, sp.branches,
                                     sp.event or events.get((sp.kind, round(sp.parameter, 9)))))
    return out


# ---------------------------------------------------------------------------------------------
# the equilibrium


@dataclass(frozen=True)
class _Segment:
    branch: str
    xs: list[float]  # requested values where this branch is the equilibrium


def _segments(result: Result) -> list[_Segment | None]:
    """Runs of requested values with one equilibrium branch (None: a value without an equilibrium)."""
    out: list[_Segment | None] = []
    for x, eq in sorted(zip(result.parameter_values, result.equilibria, strict=True), key=lambda r: r[0]):
        if eq is None:
            if out and out[-1] is not None:
                out.append(None)
            continue
        last = out[-1] if out else None
        if last is not None and last.branch == eq:
            last.xs.append(float(x))
        else:
            out.append(_Segment(eq, [float(x)]))
    return out


def _boundary(result: Result, a: _Segment, b: _Segment) -> Transition | None:
    """The transition between two consecutive equilibria: in the interval between them, involving both (a
    first-order point preferred), else one of them; None when the result reports none there."""
    lo, hi = a.xs[-1], b.xs[0]
    tol = SAME * _span(result)
    inside = [t for t in result.transitions if t.parameter is not None and lo - tol <= t.parameter <= hi + tol]
    both = [t for t in inside if {a.branch, b.branch} <= set(t.branches)]
    either = [t for t in inside if {a.branch, b.branch} & set(t.branches)]
    for group in (both, either):
        group.sort(key=lambda t: t.kind != "first_order")
        if group:
            return group[0]
    return None


def _rows(result: Result, quantity: str, branch: str, lo: float, hi: float) -> list[tuple[float, float]]:
    """(parameter, value) of ``branch`` on the traced curves within [lo, hi], in increasing parameter, one row per
    parameter (stable rows first: the equilibrium is a stable branch)."""
    tol = SAME * _span(result)
    rows: list[tuple[bool, float, float]] = []
    for curve in traced(result, quantity):
        ys = curve.values(quantity) or []
        for name, x, y, stable in zip(curve.branch, curve.parameter, ys, curve.stable, strict=True):
            y = _number(y)
            if name == branch and y is not None and x is not None and lo - tol <= x <= hi + tol:
                rows.append((stable is False, float(x), y))
    out: list[tuple[float, float]] = []
    for _, x, y in sorted(rows, key=lambda r: (r[1], r[0])):
        if not out or x - out[-1][0] > tol:
            out.append((x, y))
    return out


def _requested(result: Result, quantity: str, seg: _Segment) -> list[tuple[float, float]]:
    """The equilibrium's values at the requested values of a segment (no curve carries its branch)."""
    out = []
    for x, eq, value in zip(result.parameter_values, result.equilibria, result.values(quantity), strict=True):
        y = _number(value)
        if eq == seg.branch and float(x) in seg.xs and y is not None:
            out.append((float(x), y))
    return sorted(out)


@dataclass(frozen=True)
class EquilibriumPath:
    """The equilibrium's value along the sweep, NaN where it is interrupted; ``jumps``: the first-order points,
    each drawn as two consecutive rows at its parameter (a vertical segment)."""

    x: list[float]
    y: list[float]
    jumps: list[float]


def equilibrium_path(result: Result, quantity: str) -> EquilibriumPath:
    """The equilibrium branch's ``quantity`` from the traced curves, changing branch at the reported transitions:
    vertically at a first-order point (both sides' values at its parameter), continuously at a stability loss
    or a fold. Where a result has no curve of the equilibrium branch, its requested values stand in, and where
    two equilibria meet at no reported transition, the path is interrupted rather than joined."""
    segments = _segments(result)
    xs: list[float] = []
    ys: list[float] = []
    jumps: list[float] = []
    have_curves = bool(traced(result, quantity))
    for i, seg in enumerate(segments):
        if seg is None:
            xs.append(math.nan)
            ys.append(math.nan)
            continue
        before = segments[i - 1] if i > 0 else None
        after = segments[i + 1] if i + 1 < len(segments) else None
        left = _boundary(result, before, seg) if before is not None else None
        right = _boundary(result, seg, after) if after is not None else None
        lo = left.parameter if left is not None and left.parameter is not None else seg.xs[0]
        hi = right.parameter if right is not None and right.parameter is not None else seg.xs[-1]
        rows = _rows(result, quantity, seg.branch, lo, hi) if have_curves else []
        tol = SAME * _span(result)
        continued = _continued(result, quantity, seg, before, hi, xs, ys) if left is None and have_curves else []
        if continued:
            rows = continued
        if not rows:
            rows = _requested(result, quantity, seg)
        meet = bool(continued) or (left is not None and bool(rows) and bool(xs) and abs(rows[0][0] - lo) <= tol
                                   and abs(xs[-1] - lo) <= tol)
        if xs and not meet:
            xs.append(math.nan)  # two equilibria meet at no point that both reach: do not join them
            ys.append(math.nan)
        elif meet and left is not None and left.kind == "first_order":
            jumps.append(lo)
        for x, y in rows:
            xs.append(x)
            ys.append(y)
    return EquilibriumPath(xs, ys, jumps)


def _continued(result: Result, quantity: str, seg: _Segment, before: _Segment | None, hi: float,
               xs: list[float], ys: list[float]) -> list[tuple[float, float]]:
    """``seg``'s rows from where the equilibrium before it ended, when no transition separates them and a curve of
    ``seg``'s branch passes through that very point (same parameter, same value): one solution whose name changed
    along its curve (a theory that names its one solution by its state, e.g. m_S ≥ ½), drawn unbroken."""
    if before is None or not xs or math.isnan(xs[-1]):
        return []
    rows = _rows(result, quantity, seg.branch, xs[-1], hi)
    scale = max((abs(y) for y in ys if not math.isnan(y)), default=1.0) or 1.0
    if rows and abs(rows[0][0] - xs[-1]) <= SAME * _span(result) and abs(rows[0][1] - ys[-1]) <= 1e-6 * scale:
        return rows[1:]
    return []


def varies(values: Sequence[Any]) -> bool:
    """Whether a quantity takes more than one numeric value (up to rounding)."""
    numbers = [v for v in (_number(v) for v in values) if v is not None]
    return bool(numbers) and max(numbers) - min(numbers) > 1e-12 * max(1.0, max(abs(v) for v in numbers))


def equilibrium_spans(result: Result) -> list[tuple[str, float, float]]:
    """(branch, from, to): where each branch is the equilibrium, from transition to transition (the requested
    values' ends where the result reports none between two equilibria)."""
    segments = _segments(result)
    out = []
    for i, seg in enumerate(segments):
        if seg is None:
            continue
        before = segments[i - 1] if i > 0 else None
        after = segments[i + 1] if i + 1 < len(segments) else None
        left = _boundary(result, before, seg) if before is not None else None
        right = _boundary(result, seg, after) if after is not None else None
        lo = left.parameter if left is not None and left.parameter is not None else _reach(result, seg, -1)
        hi = right.parameter if right is not None and right.parameter is not None else _reach(result, seg, +1)
        out.append((seg.branch, lo, hi))
    return out


def _reach(result: Result, seg: _Segment, side: int) -> float:
    """How far an equilibrium reaches beyond its last (``side`` +1) or first (-1) requested value where no other
    equilibrium follows: to its own transition (a stability loss, a fold) before the next requested value, else
    that requested value itself."""
    edge = seg.xs[-1] if side > 0 else seg.xs[0]
    xs = sorted(float(x) for x in _requested_values(result))
    beyond = [x for x in xs if (x - edge) * side > 0]
    if not beyond:
        return edge
    limit = beyond[0] if side > 0 else beyond[-1]
    own = [t.parameter for t in result.transitions if seg.branch in t.branches and t.parameter is not None
           and min(edge, limit) < t.parameter <= max(edge, limit)]
    if not own:
        return edge
    return min(own) if side > 0 else max(own)


def split_metastable(result: Result, pieces: Sequence[Stretch]) -> list[tuple[Stretch, bool]]:
    """Each stable stretch cut where its branch stops or starts being the equilibrium: (piece, True) where it is
    the equilibrium, (piece, False) where it is stable but not the equilibrium (metastable); unstable stretches and
    those of unknown stability come back whole, with False. A cut falls at the transition's parameter, the value
    there interpolated between the rows on either side. A result without traced curves (a grid sweep) is not cut:
    nothing is drawn between its requested values that was not computed."""
    if not result.curves:
        return [(p, p.stable is True) for p in pieces]
    spans = equilibrium_spans(result)
    tol = SAME * _span(result)
    out: list[tuple[Stretch, bool]] = []
    for p in pieces:
        if p.stable is not True:
            out.append((p, False))
            continue
        mine = [(lo, hi) for name, lo, hi in spans if name == p.branch]

        def inside(x: float, mine: list[tuple[float, float]] = mine) -> bool:
            return any(lo - tol <= x <= hi + tol for lo, hi in mine)

        edges = sorted({e for span in mine for e in span})
        xs, ys, state = [p.x[0]], [p.y[0]], None
        for x0, y0, x1, y1 in zip(p.x, p.y, p.x[1:], p.y[1:], strict=False):
            cuts = sorted((e for e in edges if min(x0, x1) < e < max(x0, x1)), reverse=x1 < x0)
            points = [(x0, y0), *((e, y0 + (y1 - y0) * (e - x0) / (x1 - x0)) for e in cuts), (x1, y1)]
            for (a, ya), (b, yb) in itertools.pairwise(points):
                here = inside(0.5 * (a + b)) if a != b else (state if state is not None else inside(a))
                if state is not None and here != state:
                    out.append((Stretch(p.branch, p.stable, xs, ys), state))
                    xs, ys = [a], [ya]
                state = here
                xs.append(b)
                ys.append(yb)
        out.append((Stretch(p.branch, p.stable, xs, ys), bool(state)))
    return [(s, eq) for s, eq in out if len(s.x) > 1]


#: A step of the equilibrium across a transition is a jump when it exceeds this fraction of the drawn range …
JUMP_OF_RANGE = 0.05
#: … and this many times the step the slopes on either side of it predict.
JUMP_OF_SLOPE = 5.0


def _is_jump(run: Sequence[tuple[float, float]], k: int, span: float) -> bool:
    """Whether the step from row k to row k + 1 of a run is a jump: vertical, or large against both the drawn range
    and the slopes of the steps beside it."""
    (x0, y0), (x1, y1) = run[k], run[k + 1]
    dy = abs(y1 - y0)
    if x1 == x0:
        return dy > 0
    slopes = []
    for i in (k - 1, k + 1):
        if i >= 0 and i + 1 < len(run) and run[i + 1][0] != run[i][0]:
            slopes.append(abs((run[i + 1][1] - run[i][1]) / (run[i + 1][0] - run[i][0])))
    expected = (sum(slopes) / len(slopes)) * abs(x1 - x0) if slopes else 0.0
    return dy > JUMP_OF_RANGE * span and dy > JUMP_OF_SLOPE * expected


def jumps_of(path: EquilibriumPath, at: Sequence[float]) -> list[float]:
    """Which of the parameters ``at`` (transitions) the drawn equilibrium jumps at: a vertical step there, a step
    across it far larger than its neighbours' slopes predict (a quantity that is discontinuous along one solution,
    e.g. the position of the deepest well), or an interruption of the path."""
    runs: list[list[tuple[float, float]]] = [[]]
    for x, y in zip(path.x, path.y, strict=True):
        if math.isnan(x) or math.isnan(y):
            runs.append([])
        else:
            runs[-1].append((x, y))
    runs = [sorted(r) for r in runs if r]
    ys = [y for r in runs for _, y in r]
    span = (max(ys) - min(ys)) if ys else 0.0
    out = []
    for t in at:
        tol = SAME * max(1.0, abs(t))
        run = next((r for r in runs if r[0][0] - tol <= t <= r[-1][0] + tol), None)
        if run is None:
            out.append(t)  # the path is interrupted there
            continue
        steps = [k for k in range(len(run) - 1) if run[k][0] - tol <= t <= run[k + 1][0] + tol]
        if any(_is_jump(run, k, span) for k in steps):
            out.append(t)
    return out
