"""A sweep reports its points in blocks where the theory reports many at once: every point reported as the theory
reports it alone, handed on once, in the order of the values, with its notes; without ``report_many`` nothing
changes."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pytest

from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.report_blocks import BLOCK_POINTS
from solvers.core.results import Catalogue, Notes, Report
from solvers.core.sweep import run_sweep
from tests.core.problems import tilted_double_well


def _reported(problem: Problem) -> tuple[Problem, dict[str, list[int]]]:
    """The double well with a report (x³ and the control value), its notes (how many branches), and a report_many
    that counts its calls and the points of each."""
    calls: dict[str, list[int]] = {"one": [], "many": []}

    def report(x: np.ndarray, p: float) -> Report:
        calls["one"].append(1)
        return Report({"x": float(x[0])}, {"cube": float(x[0]) ** 3, "at": p})

    def report_many(points: Sequence[tuple[np.ndarray, float]]) -> list[Report]:
        calls["many"].append(len(points))
        # computed apart from ``report``, as a theory's batched path is: all points in one array operation
        xs = np.array([x[0] for x, _ in points])
        return [Report({"x": float(x)}, {"cube": float(c), "at": p}) for x, c, (_, p) in
                zip(xs, xs**3, points, strict=True)]

    def notes(cat: Catalogue) -> Notes:
        return Notes(diagnostics={"branches_seen": len(cat.branches)})

    with_reports = dataclasses.replace(problem, report=report, report_many=report_many, notes=notes)
    return with_reports, calls


@pytest.mark.parametrize("method", ["grid", "continuation"])
def test_a_sweep_reports_its_points_in_blocks_as_each_alone(method: str) -> None:
    values = [float(v) for v in np.linspace(-0.6, 0.6, BLOCK_POINTS + 21)]
    values[10] = values[9]  # a repeated value: a continuation hands one catalogue on at both, reported once
    batched, calls = _reported(tilted_double_well())
    alone = dataclasses.replace(batched, report_many=None)
    seen: list[tuple[int, Catalogue]] = []
    sweep = run_sweep(batched, values, SolverOptions(), method=method, on_point=lambda i, c: seen.append((i, c)))
    # the points in two blocks; a continuation's curve tables report their own rows (not requested values) alone
    assert len(calls["many"]) == 2
    rows = len(calls["one"])
    reference = run_sweep(alone, values, SolverOptions(), method=method)
    assert len(calls["one"]) - rows == rows + sum(len(c.branches) for c in reference.catalogues) - (
        len(reference.catalogues[10].branches) if method == "continuation" else 0)

    assert [i for i, _ in seen] == list(range(len(values)))  # each point once, in the order of the values
    branches = sum(len(c.branches) for c in reference.catalogues)
    repeated = len(reference.catalogues[10].branches) if method == "continuation" else 0
    assert sum(calls["many"]) == branches - repeated
    for (_, got), cat, ref in zip(seen, sweep.catalogues, reference.catalogues, strict=True):
        assert got is cat  # the sweep's catalogues are the reported ones that were handed on
        assert [b.name for b in got.branches] == [b.name for b in ref.branches]
        for b, r in zip(got.branches, ref.branches, strict=True):
            assert b.report is not None and r.report is not None
            assert b.report.order_parameters == r.report.order_parameters
            assert b.report.observables == pytest.approx(r.report.observables, rel=1e-15)
        assert got.notes == ref.notes and got.notes is not None


def test_without_report_many_each_point_is_reported_as_it_is_solved() -> None:
    problem, calls = _reported(tilted_double_well())
    problem = dataclasses.replace(problem, report_many=None)
    handed: list[int] = []

    def on_point(i: int, cat: Catalogue) -> None:
        # the point is reported when it is handed on, and handed on before the next one is solved
        assert all(b.report is not None for b in cat.branches)
        handed.append(len(calls["one"]))

    values = [float(v) for v in np.linspace(-0.6, 0.6, 9)]
    run_sweep(problem, values, SolverOptions(), method="grid", on_point=on_point)
    assert calls["many"] == [] and handed == sorted(handed) and handed[0] >= 1
    assert len(set(handed)) == len(values)
