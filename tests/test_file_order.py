"""The suite's file order: costliest file first, each file's tests in their own order; costs read back from a
junit report."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests import file_order


def _items(*nodeids: str) -> list[Any]:
    return [SimpleNamespace(nodeid=n) for n in nodeids]


def test_files_run_costliest_first_and_keep_their_tests_in_order(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps({"tests/a.py": 1.0, "tests/b.py": 50.0}))
    monkeypatch.setattr(file_order, "COSTS", costs)
    # c.py is not listed: 3 tests × 0.5 s = 1.5 s, between a.py and b.py
    items = _items("tests/a.py::x", "tests/a.py::y", "tests/c.py::p", "tests/b.py::q", "tests/c.py::r",
                   "tests/c.py::s", "tests/b.py::t")
    file_order.order_by_cost(items)
    assert [i.nodeid for i in items] == ["tests/b.py::q", "tests/b.py::t", "tests/c.py::p", "tests/c.py::r",
                                         "tests/c.py::s", "tests/a.py::x", "tests/a.py::y"]


def test_costs_add_up_per_file_from_a_junit_report(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    report.write_text(
        '<testsuites><testsuite>'
        '<testcase classname="tests.core.test_x" name="a" time="1.25"/>'
        '<testcase classname="tests.core.test_x" name="b" time="2.5"/>'
        '<testcase classname="tests.service.test_y.TestGroup" name="c" time="4"/>'
        '</testsuite></testsuites>'
    )
    assert file_order.costs_from_junit(report) == {"tests/service/test_y.py": 4.0, "tests/core/test_x.py": 3.8}
