"""The reports of a sweep's points, a block of points at a time where the theory reports many at once.

A theory whose report of one point is mostly fixed cost (small array operations on data shared by every point)
may give ``Problem.report_many``. A sweep then solves its points without their reports, reports them in blocks,
and hands each point on (``on_point``) in the order of the values as soon as its block is reported. A block is
reported when it holds ``BLOCK_POINTS`` points, or when the time since it began (since the previous block was
handed on) and the time its report will take (at the previous block's rate per point) come to ``BLOCK_SECONDS``,
whichever comes first. So progress, stored points and a caller's stop check lag the solving by about
``BLOCK_SECONDS`` and one point's solve, however slow the points or their reports are (the first block, before a
rate is known, by its report's time more). Where a block ends thus depends on the machine's speed; what a point's
report says does not (``report_many`` reports each point as the theory reports it alone, up to the rounding of
its batched products). A catalogue's notes are taken
when it is solved (a theory's notes may read what it remembers of recent solves only). Without ``report_many``
every point is reported and handed on as it is solved.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from solvers.core.problem import Problem
from solvers.core.results import Catalogue

#: Points reported together, at most.
BLOCK_POINTS = 64
#: Seconds (wall clock) from a block's start to its points handed on, reported included, when it is not full first.
BLOCK_SECONDS = 0.025
#: The clock the time bound reads (seconds; a test gives :class:`ReportBlocks` its own).
CLOCK: Callable[[], float] = time.perf_counter


class ReportBlocks:
    """Collects a sweep's solved catalogues (:meth:`add`) and reports them, a block at a time or each at once."""

    def __init__(
        self, problem: Problem, on_point: Callable[[int, Catalogue], None] | None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.problem = problem
        self.on_point = on_point
        self.clock = CLOCK if clock is None else clock
        #: When the waiting block began: the blocks' start, then when the previous block was handed on.
        self._began = self.clock()
        #: Seconds the previous block's report took per point (0 before the first).
        self._rate = 0.0
        #: Whether the sweep solves its catalogues with their reports (the theory reports one point at a time).
        self.each = problem.report_many is None
        self._waiting: list[tuple[int, Catalogue]] = []
        self._reported: dict[int, Catalogue] = {}
        #: id of a catalogue added -> (it, it with its notes): a repeated value's catalogue is noted and reported once
        self._noted: dict[int, tuple[Catalogue, Catalogue]] = {}

    def add(self, index: int, cat: Catalogue) -> None:
        """The catalogue solved at value ``index``: reported already when :attr:`each`, else without its report (one
        catalogue may be added at several indices: a repeated value)."""
        if self.each:
            if self.on_point is not None:
                self.on_point(index, cat)
            return
        held = self._noted.get(id(cat))
        if held is None or held[0] is not cat:
            noted = cat if self.problem.notes is None else cat.replace(notes=self.problem.notes(cat))
            held = self._noted[id(cat)] = (cat, noted)
        self._waiting.append((index, held[1]))
        n = len(self._waiting)
        if n >= BLOCK_POINTS or self.clock() - self._began + n * self._rate >= BLOCK_SECONDS:
            self.flush()

    def flush(self) -> None:
        """Report the waiting catalogues together and hand them on in order."""
        if not self._waiting:
            return
        assert self.problem.report_many is not None
        unique = {id(cat): cat for _, cat in self._waiting}
        points = [(b.x, cat.parameter) for cat in unique.values() for b in cat.branches]
        start = self.clock()
        reports = iter(self.problem.report_many(points))
        self._rate = (self.clock() - start) / len(self._waiting)
        done = {key: cat.replace(branches=tuple(b.replace(report=next(reports)) for b in cat.branches))
                for key, cat in unique.items()}
        waiting, self._waiting = self._waiting, []
        self._noted.clear()
        for index, cat in waiting:
            self._reported[index] = done[id(cat)]
            if self.on_point is not None:
                self.on_point(index, done[id(cat)])
        self._began = self.clock()

    def catalogues(self, cats: Sequence[Catalogue]) -> tuple[Catalogue, ...]:
        """``cats`` (one per value) with every catalogue added here reported: the waiting ones first."""
        self.flush()
        return tuple(self._reported.get(i, cat) for i, cat in enumerate(cats))
