"""A chain's clock sizes every compiled call so that the chain stops in time — inside a warmup of any length or a
block of any size — without stopping far too early; simulated calls on a simulated clock (no sampling here)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pytest

from solvers.experiments import SamplerOptions, stepping
from solvers.experiments.clock import CHUNK_FRACTION, ChainClock


@dataclass(frozen=True)
class FakeCheckpoint:
    steps: int
    draws_done: int
    warmup_total: int

    @property
    def warming_up(self) -> bool:
        return self.steps < self.warmup_total

    @property
    def warmup(self) -> Any:
        return self


class Machine:
    """Simulated time: a call costs ``compile`` the first time of its kind, then ``cost(t)`` per unit."""

    def __init__(self, cost: Any, compile_seconds: float = 2.0):
        self.t = 0.0
        self.cost = cost
        self.compile = compile_seconds
        self.compiled: set[str] = set()
        self.calls: list[tuple[str, int]] = []

    def now(self) -> float:
        return self.t

    def spend(self, kind: str, units: int) -> None:
        if kind not in self.compiled:
            self.compiled.add(kind)
            self.t += self.compile
        for _ in range(units):
            self.t += self.cost(self.t)
        self.calls.append((kind, units))


def run(machine: Machine, options: SamplerOptions, limit: float, monkeypatch: pytest.MonkeyPatch) -> FakeCheckpoint:
    def advance_warmup(target: Any, opts: Any, ck: FakeCheckpoint | None, n: int) -> FakeCheckpoint:
        if ck is None:
            return FakeCheckpoint(0, 0, options.warmup)
        machine.spend("warmup", n)
        return replace(ck, steps=min(options.warmup, ck.steps + n))

    def run_block(target: Any, opts: Any, ck: FakeCheckpoint, n: int) -> tuple[FakeCheckpoint, None]:
        machine.spend("draws", n)
        return replace(ck, draws_done=ck.draws_done + n), None

    monkeypatch.setattr(stepping, "advance_warmup", advance_warmup)
    monkeypatch.setattr(stepping, "run_block", run_block)
    clock = ChainClock(limit, now=machine.now)
    last = None
    for step in stepping.steps(None, options, None, clock):  # type: ignore[arg-type]
        last = step.checkpoint
    assert last is not None
    return last


MALA = SamplerOptions(method="mala", warmup=40_000, draws=100_000, block_size=1_000_000 // 10)


def test_a_long_warmup_is_cut_at_the_limit(monkeypatch: pytest.MonkeyPatch):
    machine = Machine(lambda t: 0.002)  # 40 000 steps: 80 s
    last = run(machine, MALA, 5.0, monkeypatch)
    assert last.warming_up and 0 < last.steps < MALA.warmup
    assert machine.t <= 5.0  # never past the limit when a step costs what it was measured to cost
    assert machine.t >= 5.0 - 2 * 0.002 * 40  # and not far before it (the last calls halve the time left)


def test_a_huge_block_is_cut_at_the_limit(monkeypatch: pytest.MonkeyPatch):
    options = SamplerOptions(method="mala", warmup=10, draws=100_000, block_size=100_000)
    machine = Machine(lambda t: 0.001)
    last = run(machine, options, 5.0, monkeypatch)
    assert not last.warming_up and 0 < last.draws_done < options.draws
    assert machine.t <= 5.0
    assert max(units for kind, units in machine.calls if kind == "draws") < options.block_size


def test_a_step_that_grows_costlier_overshoots_by_at_most_one_planned_call(monkeypatch: pytest.MonkeyPatch):
    # the cost of a step jumps tenfold at t = 20 s (a NUTS trajectory that lengthens): the call under way was
    # planned for at most CHUNK_FRACTION of the limit at the old cost
    limit = 60.0
    machine = Machine(lambda t: 0.01 if t < 20.0 else 0.1)
    last = run(machine, MALA, limit, monkeypatch)
    assert last.warming_up
    assert machine.t <= limit + 10 * CHUNK_FRACTION * limit


def test_without_a_limit_each_call_is_as_large_as_asked(monkeypatch: pytest.MonkeyPatch):
    options = SamplerOptions(method="mala", warmup=300, draws=250, block_size=100)
    machine = Machine(lambda t: 0.001)
    last = run(machine, options, None, monkeypatch)  # type: ignore[arg-type]
    assert (last.steps, last.draws_done) == (300, 250)
    assert machine.calls == [("warmup", 300), ("draws", 100), ("draws", 100), ("draws", 50)]


def test_compilation_does_not_count_as_the_cost_of_a_step(monkeypatch: pytest.MonkeyPatch):
    # a first call that spends 4 s compiling, with a 5 s limit: the second call measures the step itself
    machine = Machine(lambda t: 0.0001, compile_seconds=4.0)
    last = run(machine, MALA, 5.0, monkeypatch)
    assert last.steps > 1000
