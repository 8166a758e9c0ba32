"""A sweep point converts each branch once and takes the point's tables from the equilibrium branch: the same JSON
as converting the whole point (non-finite values listed under both names), and its text (written by orjson) holds
the same numbers as the standard library's."""

from __future__ import annotations

import json

import numpy as np

from service.jsonsafe import json_safe
from service.serialize import POINT_KEYS, _catalogue_body, _compact_branch, dumps, point_json, point_text
from solvers.core.catalogue import solve_catalogue
from solvers.core.options import SolverOptions
from solvers.core.results import Catalogue, Notes, Report
from tests.core.problems import tilted_double_well


def _reference(value: float, cat: Catalogue) -> dict:
    """The point as the whole body converted at once, then made compact."""
    body = _catalogue_body(cat)
    point = json_safe({"parameter": float(value), **{k: body[k] for k in POINT_KEYS[1:]}})
    point["branches"] = [_compact_branch(b, point) for b in point["branches"]]
    return point


def _catalogue() -> Catalogue:
    """Both wells of the tilted double well, with non-finite entries in the equilibrium's and the other branch's
    tables, and notes that replace one of the equilibrium's observables."""
    problem = tilted_double_well()
    cat = solve_catalogue(problem, 0.05, SolverOptions())
    assert len(cat.branches) == 2
    branches = []
    for k, b in enumerate(cat.branches):
        obs = {"energy": float(k), "profile": np.array([1.0, np.inf if k != 1 else 2.0, 3.0]),
               "nested": {"a": float("nan") if b.name == cat.equilibrium else 0.5, "b": 1e-5},
               "noted": float("-inf"), "count": k}
        branches.append(b.replace(report=Report({"m": float(b.x[0]), "bad": float("nan") if k == 1 else 1.0}, obs)))
    return cat.replace(branches=tuple(branches), notes=Notes(observables={"noted": 2.0, "extra": [1.0, float("nan")]}))


def test_a_point_is_the_whole_point_converted_and_made_compact() -> None:
    cat = _catalogue()
    point = point_json(0.05, cat)
    assert json.dumps(point) == json.dumps(_reference(0.05, cat))
    assert "observables.nested.a" in point["non_finite"] and "observables.noted" not in point["non_finite"]
    plain = solve_catalogue(tilted_double_well(), -0.3, SolverOptions())
    assert json.dumps(point_json(-0.3, plain)) == json.dumps(_reference(-0.3, plain))


def test_a_points_text_holds_the_same_numbers_as_the_standard_library_writes() -> None:
    point = point_json(0.05, _catalogue())
    point["observables"]["small"] = [1e-5, 4.80030012113275e-05, 1e22, -0.0, 5e-324, 1.7976931348623157e308]
    assert json.loads(point_text(point)) == json.loads(dumps(point))
    assert json.loads(point_text({"big": 2**70})) == {"big": 2**70}  # beyond 64 bits: written by json
