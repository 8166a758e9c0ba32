"""A sweep reports its points in blocks where the theory reports many at once: every point reported as the theory
reports it alone, handed on once, in the order of the values, with its notes; a block handed on when it is full or
when its time is up (an injected clock), whichever comes first; without ``report_many`` nothing changes."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pytest

from solvers.core import report_blocks
from solvers.core.catalogue import solve_catalogue
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.report_blocks import BLOCK_POINTS, BLOCK_SECONDS, ReportBlocks
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
def test_a_sweep_reports_its_points_in_blocks_as_each_alone(method: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report_blocks, "CLOCK", lambda: 0.0)  # time stands still: blocks by their points alone
    values = [float(v) for v in np.linspace(-0.6, 0.6, BLOCK_POINTS + 37)]
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


class Clock:
    """A clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_block_is_reported_when_its_time_is_up_before_it_is_full() -> None:
    """Points solved slowly (a third of the time bound each) are handed on once the bound has passed since their
    block began, not after BLOCK_POINTS of them: a block of three, then the next block's clock starts afresh."""
    problem, calls = _reported(tilted_double_well())
    clock = Clock()
    handed: list[tuple[int, float]] = []
    blocks = ReportBlocks(problem, lambda i, c: handed.append((i, clock.now)), clock=clock)
    options = SolverOptions()
    cats = []
    for i, v in enumerate(np.linspace(-0.6, 0.6, 7)):
        clock.now += BLOCK_SECONDS / 3 * (1 + 1e-9)  # the solve's time
        cats.append(solve_catalogue(problem, float(v), options, report=blocks.each))
        blocks.add(i, cats[-1])
        if i < 2:
            assert handed == []  # within the bound: waiting
    assert [i for i, _ in handed] == [0, 1, 2, 3, 4, 5]  # two blocks of three, each when its third point came
    assert handed[2][1] - 0.0 >= BLOCK_SECONDS and handed[3][1] == handed[5][1]
    reported = blocks.catalogues(cats)
    assert [i for i, _ in handed] == list(range(7)) and len(calls["many"]) == 3
    for cat, v in zip(reported, np.linspace(-0.6, 0.6, 7), strict=True):
        alone = solve_catalogue(dataclasses.replace(problem, report_many=None), float(v), options, report=True)
        assert [b.report for b in cat.branches] == [b.report for b in alone.branches]


def test_a_point_slower_than_the_time_bound_is_handed_on_alone() -> None:
    problem, calls = _reported(tilted_double_well())
    clock = Clock()
    handed: list[int] = []
    blocks = ReportBlocks(problem, lambda i, c: handed.append(i), clock=clock)
    branches = []
    for i, v in enumerate((-0.5, 0.0, 0.5)):
        clock.now += 2 * BLOCK_SECONDS
        cat = solve_catalogue(problem, v, SolverOptions(), report=blocks.each)
        branches.append(len(cat.branches))
        blocks.add(i, cat)
        assert handed == list(range(i + 1))
    assert calls["many"] == branches  # each point's branches reported as it is solved


def test_a_blocks_report_time_counts_towards_its_bound() -> None:
    """Solves and reports each taking a tenth of the bound per point: the first block (no rate known yet) waits
    for ten points' solves, then reports them in as long again; from then on a block holds five points, so that
    its solves and its report together take the bound, and no point is handed on later than that after it was
    solved."""
    problem, calls = _reported(tilted_double_well())
    clock = Clock()
    tenth = BLOCK_SECONDS / 10
    many = problem.report_many
    assert many is not None

    def slow_many(points: Sequence[tuple[np.ndarray, float]]) -> list[Report]:
        clock.now += tenth * len(points)
        return many(points)

    problem = dataclasses.replace(problem, report_many=slow_many)
    solved: list[float] = []
    handed: list[float] = []
    blocks = ReportBlocks(problem, lambda i, c: handed.append(clock.now), clock=clock)
    values = np.linspace(0.5, 0.6, 30)  # one branch at each (past the fold at 2 / 3^(3/2))
    for i, v in enumerate(values):
        clock.now += tenth * (1 + 1e-9)
        cat = solve_catalogue(problem, float(v), SolverOptions(), report=blocks.each)
        assert len(cat.branches) == 1
        solved.append(clock.now)
        blocks.add(i, cat)
    assert calls["many"] == [10, 5, 5, 5, 5]
    lags = np.array(handed) - np.array(solved)
    assert np.max(lags[:10]) == pytest.approx(2 * BLOCK_SECONDS - tenth, rel=1e-6)  # the first block's report
    assert np.max(lags[10:]) <= (BLOCK_SECONDS - tenth) * (1 + 1e-6)
