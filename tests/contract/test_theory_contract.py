"""Every registered theory, through the same checks: schema, solve, sweep, JSON safety, cache hit, typed invariants.

A new theory gets these for free: it only has to declare ``examples`` (a small spec and a short sweep).
"""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from pydantic import TypeAdapter

from clients.tables import branch_of
from service.app import create_app
from service.jsonsafe import json_safe
from service.result_schemas import PointOut, SolveBody, SweepResult
from service.schemas import ModelSpec
from service.serialize import catalogue_from_json, curves_json, point_json, solution_json, sweep_json
from service.settings import Settings
from solvers.core.curve_tables import MAX_POINTS
from solvers.core.options import SolverOptions
from solvers.core.results import Catalogue
from solvers.core.special_points import SpecialKind
from solvers.core.status import Status
from solvers.core.sweep import Sweep
from solvers.theories import registry
from solvers.theories.base import Example, Theory
from tests.contract.declared_fields import undeclared

SPEC = TypeAdapter(ModelSpec)
OPTIONS = SolverOptions()
CASES = [(name, k) for name, th in sorted(registry().items()) for k in range(len(th.examples))]


def _example(name: str, k: int) -> tuple[Theory, Example, Any]:
    theory = registry()[name]
    ex = theory.examples[k]
    return theory, ex, SPEC.validate_python(dict(ex.spec))


@pytest.fixture(scope="module")
def api() -> TestClient:
    return TestClient(create_app(Settings(redis_url=None, rate_limit_per_minute=0)))


def assert_catalogue_invariants(cat: Catalogue) -> None:
    names = [b.name for b in cat.branches]
    assert len(names) == len(set(names)), "branch names are unique"
    assert isinstance(cat.complete, bool)
    assert isinstance(cat.status, Status)
    if cat.equilibrium is not None:
        eq = cat.get(cat.equilibrium)
        assert eq is not None and eq.converged and eq.stable is not False
        ranked = [b for b in cat.branches if b.converged and b.stable is not False and b.free_entropy is not None]
        if eq.free_entropy is not None and ranked:
            assert eq.free_entropy >= max(b.free_entropy for b in ranked) - 1e-12  # type: ignore[type-var]
    if cat.converged:
        assert cat.complete and cat.equilibrium is not None
    for b in cat.branches:
        assert not b.x.flags.writeable, "states are read-only"
        assert b.report is not None, "every listed branch is reported"
        if b.converged:
            assert np.all(np.isfinite(b.x))
            assert b.result.status is Status.CONVERGED
    # Only a complete catalogue without interrupted attempts may be cached.
    if cat.cacheable:
        assert cat.complete and not any(a.status.interrupted for a in cat.attempts)


def test_every_theory_declares_an_example() -> None:
    for name, theory in registry().items():
        assert theory.examples, f"{name} declares no examples"
        for ex in theory.examples:
            assert ex.parameter in theory.sweepable_for(SPEC.validate_python(dict(ex.spec))), (name, ex.parameter)


@pytest.mark.parametrize(("name", "k"), CASES)
def test_schema_is_listed_and_accepts_the_example(api: TestClient, name: str, k: int) -> None:
    listed = {t["name"]: t for t in api.get("/v1/theories").json()}
    assert name in listed and listed[name]["schema"] and listed[name]["summary"]
    _, _, spec = _example(name, k)
    assert spec.theory == name  # type: ignore[attr-defined]


@pytest.mark.parametrize(("name", "k"), CASES)
def test_solve_typed_invariants_and_json(name: str, k: int) -> None:
    theory, _, spec = _example(name, k)
    cat = theory.solve(spec, OPTIONS)
    assert isinstance(cat, Catalogue)
    assert_catalogue_invariants(cat)
    body = solution_json(name, cat)
    json.dumps(body, allow_nan=False)
    assert undeclared(SolveBody, body) == []  # every field the codec writes is one its model describes
    keys = {"theory", "converged", "order_parameters", "observables", "branches", "equilibrium", "diagnostics"}
    assert keys <= set(body)
    assert {"residual", "iterations", "method", "seconds", "status", "message", "complete"} <= set(body["diagnostics"])
    # A stored point turns back into the same catalogue (what resuming a sweep relies on).
    point = point_json(0.0, cat)
    assert undeclared(PointOut, point) == []
    back = catalogue_from_json(point)
    assert [b.name for b in back.branches] == [b.name for b in cat.branches]
    for b0, b1 in zip(cat.branches, back.branches, strict=True):
        np.testing.assert_array_equal(b0.x, b1.x)
        assert (b0.stable, b0.converged) == (b1.stable, b1.converged)
        # The compact point's reading rule (the branch's entry, else the point's) gives each branch's whole
        # report, on the server (resume) and in the client alike.
        assert b0.report is not None and b1.report is not None
        for group in ("order_parameters", "observables"):
            complete = _plain(getattr(b0.report, group))
            assert _plain(getattr(b1.report, group)) == complete, (b0.name, group)
            read = branch_of(point, b0.name)
            assert read is not None and _plain(read[group]) == complete, (b0.name, group)


def _plain(table: Any) -> dict[str, Any]:
    """A report table as JSON carries it, without entries that carry no value (null)."""
    return {k: v for k, v in json_safe(dict(table)).items() if v is not None and k != "non_finite"}


@pytest.mark.parametrize(("name", "k"), CASES)
def test_sweep_typed_invariants(name: str, k: int) -> None:
    theory, ex, spec = _example(name, k)
    seen: list[int] = []
    sweep = theory.sweep(spec, ex.parameter, list(ex.values), ex.method, OPTIONS,
                         on_point=lambda i, cat: seen.append(i))
    assert isinstance(sweep, Sweep)
    assert seen == list(range(len(ex.values))), "on_point is called once per value, in order"
    assert len(sweep.catalogues) == len(ex.values)
    for v, cat in zip(ex.values, sweep.catalogues, strict=True):
        assert cat.parameter == pytest.approx(v)
        assert_catalogue_invariants(cat)
    lo, hi = min(ex.values), max(ex.values)
    ps = [sp.parameter for sp in sweep.special_points]
    assert ps == sorted(ps)
    for sp in sweep.special_points:
        assert isinstance(sp.kind, SpecialKind)
        assert lo - 1e-6 * max(1.0, abs(lo)) <= sp.parameter <= hi + 1e-6 * max(1.0, abs(hi))
        assert sp.refined or sp.uncertainty > 0
    assert_curve_tables(sweep, lo, hi)
    assert undeclared(SweepResult, sweep_json(name, ex.parameter, sweep, points=[])) == []


def assert_curve_tables(sweep: Sweep, lo: float, hi: float) -> None:
    """The served curves: within the range, in arclength order, bounded, every refined special point on one."""
    curves = curves_json(sweep)
    if sweep.tables is None:
        assert curves is None
        return
    assert curves is not None and len(curves) == len(sweep.tables)
    json.dumps(curves, allow_nan=False)
    tol = 1e-9 * max(1.0, abs(lo), abs(hi))
    for table, curve in zip(sweep.tables, curves, strict=True):
        rows = table.rows
        specials = sum(r.special is not None for r in rows)
        assert 0 < len(rows) <= MAX_POINTS + specials
        assert all(lo - tol <= r.p <= hi + tol for r in rows)
        s = [r.arclength for r in rows]
        assert s == sorted(s) and s[0] == 0.0
        n = len(rows)
        columns = [curve[k] for k in ("branch", "parameter", "arclength", "stable", "free_entropy")]
        columns += [*curve["order_parameters"].values(), *curve["observables"].values()]
        assert all(len(c) == n for c in columns)
        for i, r in enumerate(rows[:-1]):  # a special point written twice is the same solution both times
            if r.special is not None and rows[i + 1].special == r.special:
                assert rows[i + 1].p == r.p and np.array_equal(rows[i + 1].x, r.x)
    on_curves = {r.special for t in sweep.tables for r in t.rows}
    for k, sp in enumerate(sweep.special_points):
        if sp.refined:
            assert k in on_curves, f"the refined special point {sp} is on no served curve"


@pytest.mark.parametrize(("name", "k"), CASES)
def test_http_solve_is_json_safe_and_cached(api: TestClient, name: str, k: int) -> None:
    _, ex, _ = _example(name, k)
    first = api.post("/v1/solve", json={"model": dict(ex.spec)})
    assert first.status_code == 200, first.text
    second = api.post("/v1/solve", json={"model": dict(ex.spec)})
    a, b = first.json(), second.json()
    if a["diagnostics"]["complete"]:
        assert (a["cached"], b["cached"]) == (False, True)
        assert {k: v for k, v in a.items() if k != "cached"} == {k: v for k, v in b.items() if k != "cached"}


@pytest.mark.parametrize(("name", "k"), CASES)
def test_http_sweep_job_finishes_with_every_point(api: TestClient, name: str, k: int) -> None:
    _, ex, _ = _example(name, k)
    r = api.post("/v1/sweeps", json={"model": dict(ex.spec), "parameter": ex.parameter,
                                     "values": list(ex.values), "method": ex.method})
    assert r.status_code == 202, r.text
    url = r.json()["status_url"]
    deadline = time.monotonic() + 120
    while True:
        job = api.get(url).json()
        if job["status"] not in ("queued", "running") or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert job["status"] == "finished", job
    result = job["result"]
    assert [p["parameter"] for p in result["points"]] == pytest.approx(list(ex.values))
    json.dumps(result, allow_nan=False)
    for tr in result["transitions"]:
        assert tr["kind"] in ("first_order", "spinodal") and tr["type"] in {k.value for k in SpecialKind}


@pytest.mark.parametrize(("name", "k"), CASES)
def test_the_two_parameter_problem_is_the_bound_problem_in_the_plane(name: str, k: int) -> None:
    """At the spec's own values, F(x, (p1, p2)) is the one-parameter problem's F(x, p2) from every start."""
    theory, ex, spec = _example(name, k)
    others = [p for p in theory.sweepable_for(spec) if p != ex.parameter]
    if not others:
        pytest.skip("one sweepable field")
    pair = (others[0], ex.parameter)
    plane = theory.two_parameter_problem(spec, pair, OPTIONS)
    one = theory.problem(spec, ex.parameter, OPTIONS)
    p2 = theory.control_value(spec, ex.parameter)
    lam = np.array([theory.control_value(spec, pair[0]), p2])
    assert plane.parameters == pair and plane.dim == one.dim
    starts = plane.starts(lam)  # type: ignore[misc]
    assert set(one.starts(p2)) <= set(starts)
    for start, x0 in one.starts(p2).items():
        np.testing.assert_allclose(plane.F(x0, lam), one.F(x0, p2), rtol=1e-12, atol=1e-14, err_msg=start)
