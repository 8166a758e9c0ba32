"""JSON-safe copies name every non-finite value by its path, nested tables included, and pass plain values through
unchanged (their types kept: a bool stays a bool, an int an int)."""

from __future__ import annotations

import math

import numpy as np

from service.jsonsafe import json_safe


def test_non_finite_values_in_nested_tables_are_named_by_their_paths() -> None:
    out = json_safe({"observables": {
        "x": 1.5, "y": math.nan, "table": {"w": -math.inf, 3: -0.0, "ok": 2.0}, "none": None, "flag": True,
        "count": 7, "name": "a", "np": np.float64(np.nan), "arr": np.array([1.0, np.inf]),
    }})
    obs = out["observables"]
    assert out["non_finite"] == sorted(["observables.y", "observables.table.w", "observables.np",
                                        "observables.arr[1]"])
    assert obs["x"] == 1.5 and obs["y"] is None and obs["np"] is None and obs["arr"] == [1.0, None]
    assert obs["table"] == {"w": None, "3": 0.0, "ok": 2.0}
    assert math.copysign(1.0, obs["table"]["3"]) == 1.0  # no negative zero
    assert obs["flag"] is True and type(obs["count"]) is int and obs["count"] == 7
    assert obs["none"] is None and obs["name"] == "a"


def test_finite_tables_have_no_non_finite_list() -> None:
    out = json_safe({"a": {"b": 1.0, "c": [1.0, 2.0]}, "d": np.float64(3.0)})
    assert "non_finite" not in out and out == {"a": {"b": 1.0, "c": [1.0, 2.0]}, "d": 3.0}
