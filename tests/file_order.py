"""The order in which the suite's files are handed to pytest-xdist's processes: the costliest first.

The suite runs a whole file to one process (``--dist loadfile``), and xdist hands out files in collection order
(``--no-loadscope-reorder``; its own reorder puts the files with most tests first, which left a few files of few
but long tests, such as the worker-stop and time-limit integration tests, for the end while the other process
idled). Longest first keeps both processes busy to the end. The costs are seconds per file from a measured run
(``file_costs.json``, written by ``python -m tests.file_order JUNIT_XML`` from a ``--junitxml`` report); a file
it does not list counts as ``UNLISTED_SECONDS_PER_TEST`` per test. A stale table only changes the order.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest

COSTS = Path(__file__).with_name("file_costs.json")
UNLISTED_SECONDS_PER_TEST = 0.5


def _file_of(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def order_by_cost(items: list[pytest.Item]) -> None:
    """Reorder ``items`` in place: files by measured cost, costliest first; tests within a file keep their order."""
    costs: dict[str, float] = json.loads(COSTS.read_text()) if COSTS.exists() else {}
    counts = Counter(_file_of(item) for item in items)
    first_seen = {f: i for i, f in reversed(list(enumerate(_file_of(item) for item in items)))}

    def key(item: pytest.Item) -> tuple[float, int]:
        f = _file_of(item)
        return -costs.get(f, counts[f] * UNLISTED_SECONDS_PER_TEST), first_seen[f]

    items.sort(key=key)  # stable: a file's tests keep their collection order


def costs_from_junit(path: Path) -> dict[str, float]:
    """Seconds per test file (setup, call and teardown) from a pytest ``--junitxml`` report."""
    seconds: Counter[str] = Counter()
    for case in ET.parse(path).getroot().iter("testcase"):
        module = case.get("classname", "").split(".")
        # classname is the dotted module path, then a class name where the test is a method
        parts = [p for p in module if p and not p[0].isupper()]
        seconds["/".join(parts) + ".py"] += float(case.get("time", 0.0))
    return {f: round(s, 1) for f, s in seconds.most_common()}


if __name__ == "__main__":
    COSTS.write_text(json.dumps(costs_from_junit(Path(sys.argv[1])), indent=1) + "\n")
    print(f"wrote {COSTS}")
