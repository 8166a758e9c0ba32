"""benchmarks.idle on a simulated machine: a repetition counts only when the rest of the machine stayed quiet.

The machine's busy time, this process's CPU time and the clock are replaced by counters that the test advances, so
that a neighbour's burst falls exactly inside a chosen repetition (no timing of the real machine is involved).
"""

from __future__ import annotations

import pytest

from benchmarks import idle


class Machine:
    """Busy seconds of the whole machine and of this process; ``neighbour[k]``: CPU seconds another process uses
    during the k-th call of the measured function."""

    def __init__(self, neighbour: dict[int, float]) -> None:
        self.busy = 0.0
        self.own = 0.0
        self.calls = 0
        self.neighbour = neighbour
        self.now = 0.0

    def work(self) -> int:
        self.calls += 1
        self.own += 0.3
        self.busy += 0.3 + self.neighbour.get(self.calls, 0.0)
        self.now += 0.3
        return self.calls

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture()
def machine(monkeypatch: pytest.MonkeyPatch) -> Machine:
    m = Machine({2: 0.5})
    monkeypatch.setattr(idle, "machine_busy", lambda: m.busy)
    monkeypatch.setattr(idle, "own_cpu", lambda: m.own)
    monkeypatch.setattr(idle.time, "sleep", m.sleep)
    monkeypatch.setattr(idle.time, "monotonic", lambda: m.now)
    monkeypatch.setattr(idle.time, "perf_counter", lambda: m.now)
    return m


def test_a_disturbed_repetition_is_run_again(machine: Machine) -> None:
    first = idle.timed_when_quiet(machine.work)
    assert (first.value, first.quiet, first.discarded) == (1, True, 0)
    second = idle.timed_when_quiet(machine.work)  # call 2 is disturbed: call 3 is the one that counts
    assert (second.value, second.quiet, second.discarded) == (3, True, 1)
    assert second.seconds == pytest.approx(0.3)


def test_the_measured_processes_are_not_neighbours(machine: Machine, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server's CPU time, named as measured, is not taken for another process's."""
    machine.neighbour = {}
    monkeypatch.setattr(idle, "MAX_WAIT", 5.0)
    server = [0.0]

    def served() -> int:
        server[0] += 0.5
        machine.busy += 0.5
        return machine.work()

    named = idle.timed_when_quiet(served, measured=lambda: server[0])
    assert (named.quiet, named.discarded) == (True, 0)
    unnamed = idle.timed_when_quiet(served)  # without naming it, its time looks like a neighbour's, every time
    assert not unnamed.quiet
    assert unnamed.discarded >= 1


def test_a_machine_that_never_quiets_is_measured_and_marked(machine: Machine, monkeypatch: pytest.MonkeyPatch) -> None:
    machine.neighbour = {k: 1.0 for k in range(1, 10_000)}
    original = machine.sleep

    def busy_sleep(seconds: float) -> None:  # a neighbour busy on one core all along
        machine.busy += seconds
        original(seconds)

    monkeypatch.setattr(idle.time, "sleep", busy_sleep)
    monkeypatch.setattr(idle, "MAX_WAIT", 5.0)
    timed = idle.timed_when_quiet(machine.work)
    assert not timed.quiet
    assert machine.now >= 5.0
