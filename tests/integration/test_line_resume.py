"""Resuming a line from stored points gives the uninterrupted sweep, without recomputing the stored points."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from clients.tables import branch_of
from service.jobs.lines import Cancelled, assemble_diagram, run_line
from service.schemas import SweepRequest
from service.settings import Settings
from service.sweep_plan import plan
from tests.integration.conftest import POTENTIAL, U_FIRST_ORDER


def _payload(method: str, values: Any, **model: Any) -> dict[str, Any]:
    req = SweepRequest.model_validate(
        {"model": {**POTENTIAL, **model}, "parameter": "u", "values": values, "method": method}
    )
    return plan(req, Settings(redis_url=None))


def _summary(transitions: list[dict[str, Any]]) -> list[tuple]:
    return [(t["kind"], round(t["parameter"], 8), tuple(sorted(t["branches"])), t["refined"]) for t in transitions]


def _rho(points: list[dict[str, Any]]) -> list[list[tuple[str, float]]]:
    return [sorted((b["name"], branch_of(p, b["name"])["order_parameters"]["rho"]) for b in p["branches"])  # type: ignore[index]
            for p in points]


@pytest.mark.parametrize("method", ["continuation", "grid"])
# Interrupted before anything, at the start, across the first-order point (u ~ 29.45 is index 19), at the end.
@pytest.mark.parametrize("stored_count", [0, 1, 12, 23, 40, 41])
def test_resumed_line_equals_the_uninterrupted_one(method: str, stored_count: int) -> None:
    payload = _payload(method, {"start": 20, "stop": 40, "num": 41})
    full = run_line(payload)
    stored = {i: full["points"][i] for i in range(stored_count)}
    seen: list[int] = []
    resumed = run_line(payload, stored=stored, on_point=lambda i, _: seen.append(i))
    # Only the missing points are produced, in order, each once.
    assert seen == list(range(stored_count, 41))
    assert (resumed["reused"], resumed["computed"]) == (stored_count, 41 - stored_count)
    assert resumed["points"][:stored_count] == full["points"][:stored_count]
    np.testing.assert_allclose(
        [r for pt in _rho(resumed["points"]) for _, r in pt], [r for pt in _rho(full["points"]) for _, r in pt],
        atol=1e-9,
    )
    assert [[n for n, _ in pt] for pt in _rho(resumed["points"])] == [[n for n, _ in pt] for pt in _rho(full["points"])]
    # Special points, including those between stored neighbours on a grid, are all recovered.
    assert _summary(resumed["transitions"]) == _summary(full["transitions"])
    first = [t for t in resumed["transitions"] if t["kind"] == "first_order"]
    assert len(first) == 1 and first[0]["parameter"] == pytest.approx(U_FIRST_ORDER, abs=1e-6)
    # The curves are traced again whole: the same as the uninterrupted line's.
    assert resumed["curves"] == full["curves"]
    assert (resumed["curves"] is None) == (method == "grid")


def test_values_out_of_order_and_repeated_are_mapped_back_to_their_indices() -> None:
    values = [30.0, 22.0, 38.0, 22.0, 29.0, 35.5]
    payload = _payload("continuation", values)
    full = run_line(payload)
    assert [p["parameter"] for p in full["points"]] == values
    resumed = run_line(payload, stored={0: full["points"][0], 3: full["points"][3]})
    assert [p["parameter"] for p in resumed["points"]] == values
    assert resumed["computed"] == 4
    assert [p["equilibrium"] for p in resumed["points"]] == [p["equilibrium"] for p in full["points"]]


def test_should_stop_cancels_between_points() -> None:
    payload = _payload("grid", {"start": 20, "stop": 40, "num": 21})
    seen: list[int] = []
    with pytest.raises(Cancelled):
        run_line(payload, on_point=lambda i, _: seen.append(i), should_stop=lambda: len(seen) >= 5)
    assert seen == [0, 1, 2, 3, 4]


def test_diagram_lines_join_the_rows_transitions_in_order() -> None:
    payload = {"theory": "rubin_cavity", "model": {"theory": "rubin_cavity", "mode": "potential"},
               "parameters": ["b", "u"], "axes": [[0.3, 0.2], [1.0, 2.0]], "method": "grid"}
    pt = {"converged": True, "equilibrium": None, "branches": [], "order_parameters": {}, "observables": {}}
    rows = [
        {"points": [{**pt, "parameter": 1.0}, {**pt, "parameter": 2.0}],
         "transitions": [{"kind": "first_order", "parameter": 1.5, "branches": ["b", "a"]}]},
        {"points": [{**pt, "parameter": 1.0}, {**pt, "parameter": 2.0}],
         "transitions": [{"kind": "first_order", "parameter": 1.2, "branches": ["a", "b"]},
                         {"kind": "spinodal", "parameter": 1.7, "branches": ["a"]}]},
    ]
    out = assemble_diagram(payload, rows)
    assert [p["parameter"] for p in out["points"]] == [[0.3, 1.0], [0.3, 2.0], [0.2, 1.0], [0.2, 2.0]]
    lines = {ln["name"]: ln["points"] for ln in out["lines"]}
    assert [(q["b"], q["u"]) for q in lines["first_order:a/b"]] == [(0.2, 1.2), (0.3, 1.5)]
    assert [(q["b"], q["u"]) for q in lines["spinodal:a"]] == [(0.2, 1.7)]
    assert all(t["at"]["b"] in (0.2, 0.3) and t["line_parameter"] == "u" for t in out["transitions"])
