"""Run a planned sweep (one parameter, or one row of a phase diagram); shared by every executor."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import TypeAdapter

from service.schemas import ModelSpec
from solvers.core.options import SolverOptions
from solvers.theories import get as get_theory

_SPEC = TypeAdapter(ModelSpec)


class Cancelled(Exception):
    """Raised inside a sweep when its job was cancelled."""


def run_line(
    payload: dict[str, Any],
    *,
    fixed: dict[str, float] | None = None,
    on_point: Callable[[dict[str, Any]], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """Sweep the last parameter of the payload, with earlier parameters fixed at ``fixed``."""
    spec_dict = dict(payload["model"])
    if fixed:
        spec_dict.update(fixed)
    spec = _SPEC.validate_python(spec_dict)
    theory = get_theory(payload["theory"])
    options = SolverOptions.model_validate(payload["solver"])

    def point(pt: dict[str, Any]) -> None:
        if should_stop is not None and should_stop():
            raise Cancelled()
        if on_point is not None:
            on_point(pt)

    if should_stop is not None and should_stop():
        raise Cancelled()
    return theory.sweep(spec, payload["parameters"][-1], payload["axes"][-1], payload["method"], options, point)


def assemble_diagram(payload: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Phase diagram from its rows: every point tagged with both coordinates; transition lines."""
    p1, p2 = payload["parameters"]
    points: list[dict[str, Any]] = []
    transitions: list[dict[str, Any]] = []
    for v1, row in zip(payload["axes"][0], rows, strict=True):
        for pt in row.get("points", []):
            points.append({**pt, "parameter": [v1, pt["parameter"]]})
        for tr in row.get("transitions", []):
            transitions.append({**tr, "parameter": tr["parameter"], "at": {p1: v1}, "line_parameter": p2})
    lines: dict[str, list[dict[str, float]]] = {}
    for tr in transitions:
        name = f"{tr['kind']}:{'/'.join(tr['branches'])}"
        lines.setdefault(name, []).append({p1: tr["at"][p1], p2: tr["parameter"]})
    return {
        "parameters": [p1, p2],
        "points": points,
        "transitions": transitions,
        "lines": [{"name": k, "points": v} for k, v in lines.items()],
    }
