"""Run a planned sweep line (a one-parameter sweep, or one row of a phase diagram); shared by every executor.

A line's points are identified by their index in the requested values. ``stored`` holds the
points an earlier, interrupted execution of the same line already produced; they are reused,
never recomputed:

- ``continuation``: the curves are traced again over the whole range (tracing is adaptive, its
  cost does not depend on how many values were requested) and only the missing values are
  assembled. The two ends of the range are always passed to the engine so that it traces the
  original range; an end that is already stored is assembled again and discarded. Spinodals and
  first-order points come from the re-traced curves, so they are complete.
- ``grid``: the sweep restarts at the first missing value, warm-started by solving the last stored
  value again (discarded). Special points between stored neighbours are recovered from the stored
  points exactly as the engine finds them on a grid (a branch appears, disappears or changes
  stability between neighbours); a free-entropy crossing between stored neighbours is refined by
  sweeping that pair of values again.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from pydantic import TypeAdapter

from service.schemas import ModelSpec
from solvers.core.options import SolverOptions
from solvers.theories import get as get_theory

_SPEC = TypeAdapter(ModelSpec)

#: Called with (index in the line's values, point) for every newly computed point.
OnPoint = Callable[[int, dict[str, Any]], None]


class Cancelled(Exception):
    """Raised inside a sweep when its job was cancelled."""


def line_spec(payload: dict[str, Any], fixed: dict[str, float] | None = None) -> Any:
    """The validated spec of one line: the payload's model with the earlier parameters fixed."""
    spec_dict = dict(payload["model"])
    if fixed:
        spec_dict.update(fixed)
    return _SPEC.validate_python(spec_dict)


def line_options(payload: dict[str, Any]) -> SolverOptions:
    """The payload's solver options, capped by the instance's per-solve time limit (which is not part of the key)."""
    options = SolverOptions.model_validate(payload["solver"])
    limit = payload.get("solve_time_limit")
    if limit and (options.time_limit is None or options.time_limit > limit):
        return options.model_copy(update={"time_limit": float(limit)})
    return options


def fixed_for_row(payload: dict[str, Any], row: int | None) -> dict[str, float] | None:
    """For a phase diagram, the first parameter's value on row ``row``; None for a one-parameter sweep."""
    if len(payload["parameters"]) == 1 or row is None:
        return None
    return {payload["parameters"][0]: float(payload["axes"][0][row])}


def run_line(
    payload: dict[str, Any],
    *,
    fixed: dict[str, float] | None = None,
    stored: dict[int, dict[str, Any]] | None = None,
    on_point: OnPoint | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """Sweep the payload's last parameter (earlier ones fixed at ``fixed``), reusing ``stored`` points.

    Returns ``{"points", "transitions", "diagnostics", "reused", "computed", ...}`` with the points
    of every requested value in the requested order. ``should_stop`` is asked before the sweep and
    at every point; True raises :class:`Cancelled` (it may also raise an exception of its own).
    """
    spec = line_spec(payload, fixed)
    theory = get_theory(payload["theory"])
    options = line_options(payload)
    parameter: str = payload["parameters"][-1]
    values = [float(v) for v in payload["axes"][-1]]
    method: str = payload["method"]
    done = {int(k): v for k, v in (stored or {}).items() if 0 <= int(k) < len(values)}

    def check() -> None:
        if should_stop is not None and should_stop():
            raise Cancelled()

    check()
    todo = _todo(values, done, method)
    new: dict[int, dict[str, Any]] = {}
    matcher = _Matcher(todo)

    def take(pt: dict[str, Any]) -> None:
        check()
        idx = matcher.match(pt.get("parameter"))
        if idx is None or idx in done or idx in new:
            return  # a warm-up value or a range end assembled again: already stored
        new[idx] = pt
        if on_point is not None:
            on_point(idx, pt)

    transitions: list[dict[str, Any]] = []
    diagnostics: dict[str, Any] = {}
    if todo:
        out = theory.sweep(spec, parameter, [v for _, v in todo], method, options, take)
        transitions = list(out.get("transitions", []))
        diagnostics = dict(out.get("diagnostics", {}))
        # A theory whose sweep does not report points one by one still returns them all at the end.
        for (idx, _), pt in zip(todo, out.get("points", []), strict=False):
            if idx is not None and idx not in done and idx not in new:
                new[idx] = pt
                if on_point is not None:
                    on_point(idx, pt)
    missing = [i for i in range(len(values)) if i not in done and i not in new]
    if missing:
        raise RuntimeError(f"the sweep returned no point for {parameter} = {values[missing[0]]}")
    points = [done[i] if i in done else new[i] for i in range(len(values))]
    if method == "grid" and done:
        covered = {i for i, _ in todo if i is not None} | {_anchor_index(values, done)}
        transitions += stored_grid_transitions(theory, spec, parameter, values, points, covered, options)
    if done:
        diagnostics["resumed"] = {"reused": len(done), "computed": len(new)}
    return {
        "theory": theory.name,
        "parameter": parameter,
        "method": method,
        "points": points,
        "transitions": dedupe_transitions(transitions),
        "diagnostics": diagnostics,
        "reused": len(done),
        "computed": len(new),
    }


# ---------------------------------------------------------------------------------------------
# which values to hand to the engine
# ---------------------------------------------------------------------------------------------


def _first_missing(values: list[float], done: dict[int, Any]) -> int:
    return next((i for i in range(len(values)) if i not in done), len(values))


def _anchor_index(values: list[float], done: dict[int, Any]) -> int:
    """Grid: the stored value solved again to warm-start the rest (-1 when nothing is stored)."""
    return _first_missing(values, done) - 1


def _todo(values: list[float], done: dict[int, Any], method: str) -> list[tuple[int | None, float]]:
    """(index or None, value) pairs to sweep, in order; None marks a value computed only to be discarded."""
    n = len(values)
    if not done:
        return list(enumerate(values))
    if method == "grid":
        k = _first_missing(values, done)
        if k == n:
            return []
        return [(None, values[k - 1]), *((i, values[i]) for i in range(k, n))]
    missing = [(i, values[i]) for i in range(n) if i not in done]
    lo, hi = min(values), max(values)
    ends: list[tuple[int | None, float]] = []
    for end in (lo, hi) if hi != lo else (lo,):
        if not any(v == end for _, v in missing):
            ends.append((None, end))
    return [*ends, *missing]


class _Matcher:
    """Maps the points a sweep reports, in order, back to the indices of the values handed to it."""

    def __init__(self, todo: list[tuple[int | None, float]]):
        self.todo = todo
        self.used = [False] * len(todo)
        self.next = 0

    def match(self, value: Any) -> int | None:
        k = self.next
        if k < len(self.todo) and not self.used[k] and _same(self.todo[k][1], value):
            return self._take(k)
        for j, (_, v) in enumerate(self.todo):
            if not self.used[j] and _same(v, value):
                return self._take(j)
        raise RuntimeError(f"the sweep reported a point at an unrequested value {value!r}")

    def _take(self, k: int) -> int | None:
        self.used[k] = True
        self.next = k + 1
        return self.todo[k][0]


def _same(a: float, b: Any) -> bool:
    return isinstance(b, (int, float)) and math.isclose(a, float(b), rel_tol=1e-12, abs_tol=1e-300)


# ---------------------------------------------------------------------------------------------
# grid special points between stored neighbours
# ---------------------------------------------------------------------------------------------


def _branches(point: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {b["name"]: b for b in point.get("branches", []) if b.get("converged")}


def stored_grid_transitions(
    theory: Any,
    spec: Any,
    parameter: str,
    values: list[float],
    points: list[dict[str, Any]],
    covered: set[int],
    options: SolverOptions,
) -> list[dict[str, Any]]:
    """Special points between grid neighbours (in value order) that the resumed sweep did not see.

    The same rules as the engine's grid: a converged branch present on one side only, or stable on
    one side only, is a spinodal bracketed by the pair; a sign change of the free-entropy difference
    of two branches stable on both sides is a first-order point, refined by sweeping the pair again
    (left as the bracket's midpoint, ``refined: false``, if that does not find it).
    """
    out: list[dict[str, Any]] = []
    order = [int(i) for i in np.argsort(values, kind="stable")]
    for i0, i1 in itertools.pairwise(order):
        if i0 in covered and i1 in covered:
            continue
        p0, p1 = values[i0], values[i1]
        b0, b1 = _branches(points[i0]), _branches(points[i1])
        mid, half = 0.5 * (p0 + p1), abs(p1 - p0) / 2
        for name in sorted(set(b0) ^ set(b1)):
            out.append(_bracket("spinodal", mid, [name], "branch appears or disappears between grid points", half))
        for name in sorted(set(b0) & set(b1)):
            s0, s1 = b0[name].get("stable"), b1[name].get("stable")
            if s0 is not None and s1 is not None and s0 != s1:
                out.append(_bracket("spinodal", mid, [name], "local stability changes between grid points", half))
        stable = sorted(n for n in set(b0) & set(b1) if b0[n].get("stable") and b1[n].get("stable"))
        for a in range(len(stable)):
            for b in range(a + 1, len(stable)):
                A, B = stable[a], stable[b]
                f = [b0[A].get("free_entropy"), b0[B].get("free_entropy"),
                     b1[A].get("free_entropy"), b1[B].get("free_entropy")]
                if any(x is None for x in f):
                    continue
                d0, d1 = f[0] - f[1], f[2] - f[3]
                if d0 == 0 or d1 == 0 or np.sign(d0) == np.sign(d1):
                    continue
                out.append(_refine_crossing(theory, spec, parameter, p0, p1, [A, B], options)
                           or _bracket("first_order", mid, [A, B], "free-entropy crossing", half))
    return out


def _refine_crossing(
    theory: Any, spec: Any, parameter: str, p0: float, p1: float, pair: list[str], options: SolverOptions
) -> dict[str, Any] | None:
    """The engine's refined first-order point between p0 and p1, from a two-value grid sweep."""
    res = theory.sweep(spec, parameter, [p0, p1], "grid", options, None)
    for tr in res.get("transitions", []):
        if tr["kind"] == "first_order" and sorted(tr["branches"]) == sorted(pair):
            return dict(tr)
    return None


def _bracket(kind: str, p: float, branches: list[str], detail: str, half: float) -> dict[str, Any]:
    return {"kind": kind, "parameter": p, "branches": sorted(branches), "detail": detail,
            "refined": False, "uncertainty": half}


def dedupe_transitions(transitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Sorted by parameter; one entry per (kind, branches, location)."""
    out: list[dict[str, Any]] = []
    for t in sorted(transitions, key=lambda t: t["parameter"]):
        if any(
            u["kind"] == t["kind"]
            and sorted(u["branches"]) == sorted(t["branches"])
            and abs(u["parameter"] - t["parameter"]) <= 1e-7 * max(1.0, abs(t["parameter"]))
            for u in out
        ):
            continue
        out.append(t)
    return out


# ---------------------------------------------------------------------------------------------
# phase diagrams
# ---------------------------------------------------------------------------------------------


def tag_point(payload: dict[str, Any], row: int | None, point: dict[str, Any]) -> dict[str, Any]:
    """A point as the job reports it: on a phase diagram its ``parameter`` is ``[p1, p2]``."""
    if row is None or len(payload["parameters"]) == 1:
        return point
    return {**point, "parameter": [float(payload["axes"][0][row]), point["parameter"]]}


def diagram_summary(payload: dict[str, Any], row_transitions: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """Everything of a phase diagram's result but its points: the transitions of every row and their lines.

    Every transition found along a row carries ``at = {p1: value}`` and its location in ``p2``;
    transitions of the same kind between the same branches form a line, listed in increasing ``p1``.
    """
    p1, p2 = payload["parameters"]
    transitions: list[dict[str, Any]] = []
    for v1, trs in zip(payload["axes"][0], row_transitions, strict=True):
        for tr in trs:
            transitions.append({**tr, "at": {p1: v1}, "line_parameter": p2})
    lines: dict[str, list[dict[str, Any]]] = {}
    for tr in transitions:
        name = f"{tr['kind']}:{'/'.join(sorted(tr['branches']))}"
        lines.setdefault(name, []).append(
            {p1: tr["at"][p1], p2: tr["parameter"], "refined": tr.get("refined", True),
             "uncertainty": tr.get("uncertainty", 0.0)}
        )
    return {
        "theory": payload["theory"],
        "parameters": [p1, p2],
        "axes": {p1: list(payload["axes"][0]), p2: list(payload["axes"][1])},
        "method": payload["method"],
        "transitions": transitions,
        "lines": [
            {"name": k, "kind": k.split(":", 1)[0], "points": sorted(v, key=lambda q: (q[p1], q[p2]))}
            for k, v in sorted(lines.items())
        ],
    }


def assemble_diagram(payload: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Phase diagram from its rows (one line result per value of the first parameter, in order)."""
    points = [tag_point(payload, r, pt) for r, row in enumerate(rows) for pt in row.get("points", [])]
    return {**diagram_summary(payload, [row.get("transitions", []) for row in rows]), "points": points}


def line_summary(payload: dict[str, Any], line: dict[str, Any]) -> dict[str, Any]:
    """Everything of a one-parameter sweep's result but its points."""
    return {
        "theory": payload["theory"],
        "parameter": payload["parameters"][0],
        "method": payload["method"],
        "transitions": line["transitions"],
        "diagnostics": line.get("diagnostics", {}),
    }


def assemble_line(payload: dict[str, Any], line: dict[str, Any]) -> dict[str, Any]:
    """The result of a one-parameter sweep (what ``GET /v1/jobs/{id}`` returns)."""
    return {**line_summary(payload, line), "points": line["points"]}
