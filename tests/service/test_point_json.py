"""A sweep point converts each branch once and takes the point's tables from the equilibrium branch: the same JSON
as converting the whole point (non-finite values listed under both names), and its text (written by orjson) holds
the same numbers as the standard library's."""

from __future__ import annotations

import json

import numpy as np

from service.jsonsafe import json_safe
from service.serialize import POINT_KEYS, branch_tables, dumps, point_json, point_text, solution_json
from solvers.core.catalogue import solve_catalogue
from solvers.core.options import SolverOptions
from solvers.core.results import Catalogue, Notes, Report
from tests.core.problems import tilted_double_well


def _reference(value: float, cat: Catalogue) -> dict:
    """The point's numbers as the whole catalogue's raw tables converted at once: the point's tables (the
    equilibrium's, with the notes'), every branch's complete tables, and the paths of the non-finite values."""
    tables = [{"order_parameters": dict(b.report.order_parameters), "observables": dict(b.report.observables)}
              for b in cat.branches]
    eq = next(i for i, b in enumerate(cat.branches) if b.name == cat.equilibrium)
    raw = {"parameter": float(value), "order_parameters": tables[eq]["order_parameters"],
           "observables": {**tables[eq]["observables"], **cat.notes.observables}, "branches": tables}
    out = json_safe(raw)
    out["branches"] = [_known(b) for b in out["branches"]]
    return out


def _known(tables: dict) -> dict:
    """A branch's tables without null entries (a compact point does not tell a null entry from a missing one)."""
    return {group: {k: v for k, v in table.items() if v is not None} for group, table in tables.items()}


def _numbers(point: dict) -> dict:
    """The same numbers read back from a compact point (each branch completed from the point's tables)."""
    out = {"parameter": point["parameter"], "order_parameters": point["order_parameters"],
           "observables": point["observables"],
           "branches": [_known(dict(zip(("order_parameters", "observables"), branch_tables(point, b), strict=True)))
                        for b in point["branches"]]}
    return out


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
    reference = _reference(0.05, cat)
    assert _numbers(point) == {k: v for k, v in reference.items() if k != "non_finite"}
    # the paths of the point's own values (its branches' diagnostics and states are finite here)
    assert point["non_finite"] == reference["non_finite"]
    assert "observables.nested.a" in point["non_finite"] and "observables.noted" not in point["non_finite"]
    assert list(point)[:len(POINT_KEYS)] == list(POINT_KEYS)
    plain = solve_catalogue(tilted_double_well(), -0.3, SolverOptions())
    assert "non_finite" not in point_json(-0.3, plain)


def test_a_points_text_holds_the_same_numbers_as_the_standard_library_writes() -> None:
    point = point_json(0.05, _catalogue())
    point["observables"]["small"] = [1e-5, 4.80030012113275e-05, 1e22, -0.0, 5e-324, 1.7976931348623157e308]
    assert json.loads(point_text(point)) == json.loads(dumps(point))
    assert json.loads(point_text({"big": 2**70})) == {"big": 2**70}  # beyond 64 bits: written by json


def test_a_theorys_notes_win_over_the_computed_fields_of_the_same_name() -> None:
    cat = _catalogue()
    cat = cat.replace(notes=Notes(diagnostics={"method": "the theory's", "stationary_points": 2},
                                  fields={"equilibrium": "noted"}))
    body = solution_json("t", cat)
    assert body["diagnostics"]["method"] == "the theory's" and body["diagnostics"]["stationary_points"] == 2
    assert body["equilibrium"] == "noted" and body["diagnostics"]["complete"] is True
