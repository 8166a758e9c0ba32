"""No float leaves the service as ``-0.0``: the free entropy −U(0) of the centre well is written 0.0."""

from __future__ import annotations

import json
import math

import numpy as np
from pydantic import TypeAdapter

from service.jsonsafe import json_safe
from solvers.core.options import SolverOptions
from solvers.theories import get
from tests.payloads import solve_json


def _negative_zeros(obj: object) -> list[object]:
    if isinstance(obj, dict):
        return [z for v in obj.values() for z in _negative_zeros(v)]
    if isinstance(obj, list):
        return [z for v in obj for z in _negative_zeros(v)]
    return [obj] if isinstance(obj, float) and obj == 0.0 and math.copysign(1.0, obj) < 0 else []


def test_json_safe_writes_negative_zero_as_zero() -> None:
    out = json_safe({"a": -0.0, "b": [-0.0, 1.0], "c": np.array([-0.0, 2.0]), "d": np.float64(-0.0), "e": [np.nan]})
    assert _negative_zeros(out) == []
    assert "-0.0" not in json.dumps(out)
    assert out["non_finite"] == ["e[0]"]


def test_a_solve_with_a_well_at_the_origin_has_no_negative_zero() -> None:
    theory = get("rubin_cavity")
    spec = TypeAdapter(theory.spec_model).validate_python(
        {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": 0.5, "b": 0.3, "c": -0.3, "u": 29.45})
    out = solve_json(theory, spec, SolverOptions())
    assert _negative_zeros(out) == []
    assert "-0.0," not in json.dumps(out) and "-0.0}" not in json.dumps(out)
