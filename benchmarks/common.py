"""What every benchmark reports: named ratios (or times) measured in one run, with their goals."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Ratio:
    name: str
    value: float
    goal: float
    unit: str = "×"
    #: "<=": the value must not exceed the goal; ">=": it must reach it; "report": a figure without a goal.
    sense: str = "<="
    note: str = ""

    @property
    def met(self) -> bool:
        return self.value <= self.goal if self.sense == "<=" else self.value >= self.goal

    def row(self) -> str:
        if self.sense == "report":
            return f"| {self.name} | {self.value:.3g} {self.unit} | — | — | {self.note} |"
        mark = "yes" if self.met else "NO"
        goal = f"{self.sense} {self.goal:g} {self.unit}"
        return f"| {self.name} | {self.value:.3g} {self.unit} | {goal} | {mark} | {self.note} |"


def best_of(fn: Callable[[], object], repeat: int = 3) -> float:
    """Smallest wall time of ``repeat`` calls: the least disturbed by a noisy machine."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def print_table(ratios: list[Ratio]) -> None:
    print("| measurement | value | goal | met | note |")
    print("|---|---|---|---|---|")
    for r in ratios:
        print(r.row())
