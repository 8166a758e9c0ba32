"""Run a planned sweep line (a one-parameter sweep, one row of a phase diagram, or a boundary job); shared by
every backend.

A line's points are identified by their index in the requested values. ``stored`` holds the
points an earlier, interrupted execution of the same line already produced (as JSON, each branch
with its state); they are handed to the engine as catalogues and reused, never recomputed — the
engine re-traces the curves of a continuation (its cost does not depend on how many values were
requested) or continues a grid warm from the last stored value, and finds every special point on
all points, stored and new (:func:`solvers.core.sweep.run_sweep`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import TypeAdapter

from service.describe import merged, result_quantities
from service.jobs.boundary import run_boundary
from service.kernel.stops import Cancelled
from service.provenance import SourceWatch, check_source, provenance, seeds_in
from service.schemas import ModelSpec
from service.serialize import catalogue_from_json, curves_fields, point_json, sweep_summary
from solvers.core.options import SolverOptions
from solvers.core.results import Catalogue
from solvers.theories import get as get_theory

_SPEC = TypeAdapter(ModelSpec)

#: Called with (index in the line's values, point) for every newly computed point.
OnPoint = Callable[[int, dict[str, Any]], None]


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


def is_boundary(payload: dict[str, Any]) -> bool:
    """A boundary job: the lines of a two-parameter box, one computation (one line of the job)."""
    return payload["method"] == "boundary"


def fixed_for_row(payload: dict[str, Any], row: int | None) -> dict[str, float] | None:
    """For a phase diagram, the first parameter's value on row ``row``; None for a sweep or a boundary job."""
    if len(payload["parameters"]) == 1 or row is None or is_boundary(payload):
        return None
    return {payload["parameters"][0]: float(payload["axes"][0][row])}


def _stored_catalogues(stored: dict[int, dict[str, Any]]) -> dict[int, Catalogue]:
    return {i: catalogue_from_json(pt) for i, pt in stored.items()}


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
    of every requested value in the requested order; for a boundary job the traced ``lines`` instead
    (:mod:`service.jobs.boundary`), with no points. ``should_stop`` is asked before the sweep, at
    every continuation step and at every point; True raises :class:`Cancelled` (it may also raise
    an exception of its own).
    """
    check_source(payload)
    spec = line_spec(payload, fixed)
    theory = get_theory(payload["theory"])
    options = line_options(payload)
    parameter: str = payload["parameters"][-1]
    values = [float(v) for v in payload["axes"][-1]]
    done = {int(k): v for k, v in (stored or {}).items() if 0 <= int(k) < len(values)}

    def check(*_: Any) -> None:
        if should_stop is not None and should_stop():
            raise Cancelled()

    check()
    stamp = {"provenance": provenance(payload["key"], seeds_in(payload["model"], "model"))}
    described = {"parameters": payload["parameters"], "model": payload["model"]}
    if is_boundary(payload):
        p1, p2 = payload["parameters"]
        result = run_boundary(payload, spec, options, check, lambda v1, v2: line_spec(payload, {p1: v1, p2: v2}))
        return {**result, **stamp, "quantities": result_quantities(theory.name, **described),
                "points": [], "reused": 0, "computed": 0}
    new: dict[int, dict[str, Any]] = {}
    unchanged = SourceWatch()  # a module the solve imported lazily, edited since start: no point stored from it

    def take(index: int, cat: Catalogue) -> None:
        check()
        unchanged()
        new[index] = point_json(values[index], cat)
        if on_point is not None:
            on_point(index, new[index])

    sweep = theory.sweep(spec, parameter, values, payload["method"], options, on_point=take, on_step=check,
                         stored=_stored_catalogues(done))
    points = [done[i] if i in done else new[i] for i in range(len(values))]
    curves = curves_fields(sweep, payload["method"])
    quantities = result_quantities(theory.name, [*points, *(curves.get("curves") or [])], **described)
    return {**sweep_summary(theory.name, parameter, sweep), **curves, **stamp, "quantities": quantities,
            "points": points, "reused": len(done), "computed": len(new)}


# ---------------------------------------------------------------------------------------------
# phase diagrams
# ---------------------------------------------------------------------------------------------


def tag_point(payload: dict[str, Any], row: int | None, point: dict[str, Any]) -> dict[str, Any]:
    """A point as the job reports it: on a phase diagram its ``parameter`` is ``[p1, p2]``."""
    if row is None or len(payload["parameters"]) == 1:
        return point
    return {**point, "parameter": [float(payload["axes"][0][row]), point["parameter"]]}


def joined_provenance(outcomes: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The provenance of a job from its lines': theirs when they agree (the source always does: a worker refuses
    a job of other source), else the first line's with ``varies``: every distinct one (e.g. library versions of
    workers on different machines)."""
    seen: list[dict[str, Any]] = []
    for o in outcomes:
        p = o.get("provenance")
        if p is not None and p not in seen:
            seen.append(p)
    if not seen:
        return None
    return seen[0] if len(seen) == 1 else {**seen[0], "varies": seen}


def diagram_summary(payload: dict[str, Any], row_transitions: list[list[dict[str, Any]]],
                    provenance: dict[str, Any] | None = None) -> dict[str, Any]:
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
        "provenance": provenance,
    }


def assemble_diagram(payload: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Phase diagram from its rows (one line result per value of the first parameter, in order)."""
    points = [tag_point(payload, r, pt) for r, row in enumerate(rows) for pt in row.get("points", [])]
    return {**job_summary(payload, rows), "curves": job_curves(payload, rows), "points": points}


#: What a line's result holds besides its summary.
LINE_ONLY = ("points", "reused", "computed")
#: What a job's result keeps apart from its summary (stored and paged like its points).
CURVES = ("curves", "curves_reason")


def line_outcome(line: dict[str, Any]) -> dict[str, Any]:
    """A computed line without its points: transitions, diagnostics and whatever the theory adds about the sweep."""
    return {k: v for k, v in line.items() if k not in LINE_ONLY}


def line_summary(payload: dict[str, Any], line: dict[str, Any]) -> dict[str, Any]:
    """Everything of a one-parameter sweep's result but its points and curves."""
    return {
        **{k: v for k, v in line_outcome(line).items() if k not in CURVES},
        "theory": payload["theory"],
        "parameter": payload["parameters"][0],
        "method": payload["method"],
        "transitions": line["transitions"],
        "diagnostics": line.get("diagnostics", {}),
    }


def assemble_line(payload: dict[str, Any], line: dict[str, Any]) -> dict[str, Any]:
    """The result of a one-parameter sweep (what ``GET /v1/jobs/{id}`` returns)."""
    return {**job_summary(payload, [line]), "curves": job_curves(payload, [line]), "points": line["points"]}


def expected_points(payload: dict[str, Any]) -> int:
    """Points each line of the job stores: none for a boundary job (its result is its traced lines)."""
    return 0 if is_boundary(payload) else len(payload["axes"][-1])


def job_curves(payload: dict[str, Any], outcomes: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The traced curves of a job, from its lines (in order): a phase diagram's each tagged with its row,
    ``at = {p1: value}``. None when no line traced any (a grid; a boundary job has lines instead)."""
    if is_boundary(payload) or all(o.get("curves") is None for o in outcomes):
        return None
    if len(payload["parameters"]) == 1:
        return list(outcomes[0]["curves"])
    p1 = payload["parameters"][0]
    return [{**c, "at": {p1: float(v1)}} for v1, o in zip(payload["axes"][0], outcomes, strict=True)
            for c in o.get("curves") or []]


def job_summary(payload: dict[str, Any], outcomes: list[dict[str, Any]]) -> dict[str, Any]:
    """Everything of a job's result but its points and curves, from the outcomes of its lines (in order), with the
    validated ``model`` of the request; a job without curves says why (``curves: null``, ``curves_reason``)."""
    if is_boundary(payload):
        return {**outcomes[0], "model": payload["model"]}
    if len(payload["parameters"]) == 2:
        summary = diagram_summary(payload, [o["transitions"] for o in outcomes], joined_provenance(outcomes))
        summary["quantities"] = merged(o.get("quantities") for o in outcomes)
    else:
        summary = line_summary(payload, outcomes[0])
    if job_curves(payload, outcomes) is None:
        reason = next((o["curves_reason"] for o in outcomes if o.get("curves_reason")), None)
        summary.update(curves=None, curves_reason=reason)
    summary["model"] = payload["model"]  # every default filled in: the fixed parameters of a figure's caption
    return summary


def assemble_job(payload: dict[str, Any], lines: list[dict[str, Any]]) -> dict[str, Any]:
    """The result of any job from its computed lines (a sweep, a phase diagram's rows, a boundary job)."""
    if is_boundary(payload):
        return job_summary(payload, [line_outcome(lines[0])])
    if len(payload["parameters"]) == 2:
        return assemble_diagram(payload, lines)
    return assemble_line(payload, lines[0])
